//! A reader whose bytes a thread of its own makes ahead of the one reading them: the
//! docker-archive decompresses a layer while the previous chunk is written, on another core.

use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::Scope;

/// Bytes made ahead, at most this many chunks.
const CHUNKS_AHEAD: usize = 8;
/// The size of a chunk.
const CHUNK: usize = 1 << 20;

/// Reads what a producer thread reads from its own reader, a few chunks ahead.
pub struct ReadAhead {
    chunks: Receiver<std::io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
}

impl ReadAhead {
    /// Starts a thread in `scope` that opens its reader with `open` and reads it to the end
    /// (or until this side is dropped), each chunk handed over in order; an error ends it.
    pub fn spawn<'scope, R, F>(scope: &'scope Scope<'scope, '_>, open: F) -> ReadAhead
    where
        R: Read,
        F: FnOnce() -> std::io::Result<R> + Send + 'scope,
    {
        let (send, chunks) = sync_channel(CHUNKS_AHEAD);
        scope.spawn(move || {
            let mut reader = match open() {
                Ok(reader) => reader,
                Err(e) => return drop(send.send(Err(e))),
            };
            loop {
                let mut chunk = vec![0u8; CHUNK];
                let read = match reader.read(&mut chunk) {
                    Ok(0) => return,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return drop(send.send(Err(e))),
                };
                chunk.truncate(read);
                if send.send(Ok(chunk)).is_err() {
                    return;
                }
            }
        });
        ReadAhead {
            chunks,
            current: Vec::new(),
            at: 0,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            match self.chunks.recv() {
                Ok(chunk) => {
                    self.current = chunk?;
                    self.at = 0;
                }
                // The producer finished.
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_over_every_byte_in_order() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let read = std::thread::scope(|scope| {
            let mut reader = ReadAhead::spawn(scope, || Ok(&data[..]));
            let mut out = Vec::new();
            reader.read_to_end(&mut out).map(|_| out)
        })
        .expect("read");
        assert_eq!(read, data);
    }

    #[test]
    fn an_error_reaches_the_reader() {
        let failed = std::thread::scope(|scope| {
            let mut reader = ReadAhead::spawn(scope, || -> std::io::Result<&[u8]> {
                Err(std::io::Error::other("no layer"))
            });
            reader.read_to_end(&mut Vec::new())
        });
        assert_eq!(failed.expect_err("error").to_string(), "no layer");
    }

    #[test]
    fn a_reader_that_stops_early_ends_the_thread() {
        let endless = std::io::repeat(7);
        let head = std::thread::scope(|scope| {
            let mut reader = ReadAhead::spawn(scope, move || Ok(endless)).take(10);
            let mut out = Vec::new();
            reader.read_to_end(&mut out).map(|_| out)
        })
        .expect("read");
        assert_eq!(head, vec![7; 10]);
    }
}
