//! Python's `random.Random(seed)` (the Mersenne Twister, seeded as CPython seeds it), so that
//! `random(seed=...)` and `shuffle(seed=...)` pick what Ansible picks for the same seed, and a
//! seedless source for the picks Ansible makes with `SystemRandom`.

use std::io::Read;

use sha2::Digest;

const N: usize = 624;
const M: usize = 397;

/// CPython's Mersenne Twister (`_random.Random`).
pub struct PyRandom {
    state: [u32; N],
    index: usize,
}

/// A seed Python's `random.seed` takes: an int (its absolute value) or text (version 2).
pub enum Seed<'a> {
    /// `Random(42)`.
    Int(i128),
    /// `Random('host')`: the text and its SHA-512, as one big-endian integer.
    Text(&'a str),
}

impl PyRandom {
    fn init_genrand(seed: u32) -> Self {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            state[i] = 1_812_433_253u32
                .wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        PyRandom { state, index: N }
    }

    fn init_by_array(key: &[u32]) -> Self {
        let mut r = Self::init_genrand(19_650_218);
        let mt = &mut r.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        r
    }

    /// `random.Random(seed)`.
    pub fn new(seed: Seed) -> Self {
        // The seed as a big-endian magnitude, then as 32-bit words, least significant first.
        let bytes: Vec<u8> = match seed {
            Seed::Int(n) => n.unsigned_abs().to_be_bytes().to_vec(),
            Seed::Text(text) => {
                let mut bytes = text.as_bytes().to_vec();
                bytes.extend_from_slice(&sha2::Sha512::digest(text.as_bytes()));
                bytes
            }
        };
        let mut words: Vec<u32> = bytes
            .rchunks(4)
            .map(|chunk| chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)))
            .collect();
        while words.len() > 1 && words.last() == Some(&0) {
            words.pop();
        }
        if words.is_empty() {
            words.push(0);
        }
        Self::init_by_array(&words)
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            let mt = &mut self.state;
            for k in 0..N {
                let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(k)` for `k` up to 64.
    fn getrandbits(&mut self, k: u32) -> u64 {
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        (high << 32) | low
    }

    /// `_randbelow(n)`: uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `shuffle(items)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// Uniform in `0..n` (`n` > 0) from the operating system's randomness, as `SystemRandom`.
pub fn system_below(n: u64) -> u64 {
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    let seed = match read {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => {
            use std::hash::{BuildHasher, Hasher};
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default(),
            );
            hasher.finish()
        }
    };
    let mut generator = PyRandom::new(Seed::Int(i128::from(seed)));
    generator.below(n.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_picks_match_cpython() {
        // python3 -c 'import random; r=random.Random(1337); print([r.randrange(0,100) for _ in range(5)])'
        let mut r = PyRandom::new(Seed::Int(1337));
        let got: Vec<u64> = (0..5).map(|_| r.below(100)).collect();
        assert_eq!(got, PY_1337);
        // python3 -c 'import random; r=random.Random("myhost"); print([r.randrange(0,60) for _ in range(5)])'
        let mut r = PyRandom::new(Seed::Text("myhost"));
        let got: Vec<u64> = (0..5).map(|_| r.below(60)).collect();
        assert_eq!(got, PY_MYHOST);
        // python3 -c 'import random; r=random.Random(5); x=list(range(6)); r.shuffle(x); print(x)'
        let mut r = PyRandom::new(Seed::Int(5));
        let mut items: Vec<u32> = (0..6).collect();
        r.shuffle(&mut items);
        assert_eq!(items, PY_SHUFFLE_5);
    }

    const PY_1337: [u64; 5] = [79, 68, 90, 46, 73];
    const PY_MYHOST: [u64; 5] = [53, 35, 56, 32, 22];
    const PY_SHUFFLE_5: [u32; 6] = [1, 0, 3, 5, 2, 4];

    #[test]
    fn wide_seeds_and_ranges_match_cpython() {
        // python3 -c 'import random; r=random.Random(2**40+7); print([r.randrange(0,2**40) for _ in range(2)])'
        let mut r = PyRandom::new(Seed::Int((1 << 40) + 7));
        let got: Vec<u64> = (0..2).map(|_| r.below(1 << 40)).collect();
        assert_eq!(got, [551_799_892_330, 797_660_323_531]);
    }

    #[test]
    fn system_picks_stay_in_range() {
        assert!((0..50).all(|_| system_below(3) < 3));
    }
}
