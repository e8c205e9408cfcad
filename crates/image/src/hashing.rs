//! Writers that hash (and count) what passes through them.

use std::io::Write;

use sha2::{Digest, Sha256};

/// Passes bytes to `inner`, hashing and counting them.
pub struct HashingWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    count: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    /// The inner writer, the `sha256:<hex>` digest and the byte count.
    pub fn finish(self) -> (W, String, u64) {
        (
            self.inner,
            format!("sha256:{:x}", self.hasher.finalize()),
            self.count,
        )
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The `sha256:<hex>` digest of bytes.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}
