//! Parallel gzip: the stream is cut into fixed 1 MiB chunks, each compressed on a worker thread
//! as an independent gzip member, and the members written in order. Concatenated members are a
//! valid gzip stream (every reader, Go's included, reads them), and the output depends only on
//! the input and the level, never on timing.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

const CHUNK: usize = 1 << 20;

/// A writer that gzips on all cores.
pub struct ParallelGz<W: Write> {
    inner: W,
    buffer: Vec<u8>,
    next_in: u64,
    next_out: u64,
    done: BTreeMap<u64, Vec<u8>>,
    jobs: Option<SyncSender<(u64, Vec<u8>)>>,
    results: Receiver<(u64, std::io::Result<Vec<u8>>)>,
    workers: Vec<JoinHandle<()>>,
    in_flight: usize,
    max_in_flight: usize,
}

fn compress(chunk: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::GzBuilder::new().mtime(0).write(
        Vec::with_capacity(chunk.len() / 2),
        flate2::Compression::new(level),
    );
    encoder.write_all(chunk)?;
    encoder.finish()
}

impl<W: Write> ParallelGz<W> {
    /// Compresses into `inner` at `level` (1–9) with one worker per core.
    pub fn new(inner: W, level: u32) -> Self {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .max(1);
        let (job_tx, job_rx) = sync_channel::<(u64, Vec<u8>)>(threads * 2);
        let job_rx = std::sync::Arc::new(std::sync::Mutex::new(job_rx));
        let (result_tx, results): (Sender<_>, Receiver<_>) = channel();
        let workers = (0..threads)
            .map(|_| {
                let jobs = job_rx.clone();
                let out = result_tx.clone();
                std::thread::spawn(move || loop {
                    let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((seq, chunk)) = job else { break };
                    if out.send((seq, compress(&chunk, level))).is_err() {
                        break;
                    }
                })
            })
            .collect();
        Self {
            inner,
            buffer: Vec::with_capacity(CHUNK),
            next_in: 0,
            next_out: 0,
            done: BTreeMap::new(),
            jobs: Some(job_tx),
            results,
            workers,
            in_flight: 0,
            max_in_flight: threads * 3,
        }
    }

    fn drain_ready(&mut self, block_until_below: usize) -> std::io::Result<()> {
        while self.in_flight > block_until_below || self.done.contains_key(&self.next_out) {
            if let Some(member) = self.done.remove(&self.next_out) {
                self.inner.write_all(&member)?;
                self.next_out += 1;
                continue;
            }
            let (seq, result) = self
                .results
                .recv()
                .map_err(|_| std::io::Error::other("a compression worker died"))?;
            self.in_flight -= 1;
            self.done.insert(seq, result?);
        }
        Ok(())
    }

    fn submit(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK));
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| std::io::Error::other("already finished"))?;
        jobs.send((self.next_in, chunk))
            .map_err(|_| std::io::Error::other("the compression workers stopped"))?;
        self.next_in += 1;
        self.in_flight += 1;
        self.drain_ready(self.max_in_flight)
    }

    /// Compresses what is left, writes it, and returns the inner writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        if self.next_in == 0 && self.buffer.is_empty() {
            // An empty stream is still one (empty) gzip member.
            let member = compress(&[], 6)?;
            self.inner.write_all(&member)?;
        }
        self.submit()?;
        self.drain_ready(0)?;
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        self.inner.flush()?;
        // `self` has no Drop impl, so the inner writer can be moved out.
        Ok(self.inner)
    }
}

impl<W: Write> Write for ParallelGz<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = CHUNK - self.buffer.len();
        let n = room.min(buf.len());
        self.buffer.extend_from_slice(&buf[..n]);
        if self.buffer.len() == CHUNK {
            self.submit()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn round_trips_and_is_deterministic() {
        let data: Vec<u8> = (0..5_000_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7919) as u8)
            .collect();
        let mut a = ParallelGz::new(Vec::new(), 6);
        a.write_all(&data).expect("write");
        let a = a.finish().expect("finish");
        let mut b = ParallelGz::new(Vec::new(), 6);
        for piece in data.chunks(12345) {
            b.write_all(piece).expect("write");
        }
        let b = b.finish().expect("finish");
        assert_eq!(a, b, "the output depends only on the input");
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&a[..])
            .read_to_end(&mut back)
            .expect("gunzip");
        assert_eq!(back, data);
        let empty = ParallelGz::new(Vec::new(), 6).finish().expect("empty");
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&empty[..])
            .read_to_end(&mut back)
            .expect("gunzip empty");
        assert!(back.is_empty());
    }
}
