//! A proxy on 127.0.0.1 for the tests, standing for a site's: it forwards plain requests and
//! `CONNECT` tunnels to 127.0.0.1 at the port asked for, whatever the host (so names like
//! `registry.site.test` reach the test's servers only through it), and counts them.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A running proxy: its port and what it forwarded.
pub struct CountingProxy {
    /// The port it listens on.
    pub port: u16,
    count: Arc<AtomicUsize>,
}

impl CountingProxy {
    /// Starts one, served by a thread for the rest of the test.
    pub fn start() -> CountingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let count = Arc::new(AtomicUsize::new(0));
        let counted = count.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || forward(client));
            }
        });
        CountingProxy { port, count }
    }

    /// Connections it forwarded so far.
    pub fn forwarded(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Its URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn forward(client: TcpStream) {
    let mut reader = BufReader::new(client.try_clone().expect("clone"));
    let mut line = String::new();
    let _ = reader.read_line(&mut line);
    let mut head = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        head.push(header);
    }
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let authority = target.trim_start_matches("http://");
    let authority = authority.split('/').next().unwrap_or_default();
    let port: u16 = authority
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(80);
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let mut client = client;
    if method == "CONNECT" {
        let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
    } else {
        let path = &target[target.find(authority).map_or(0, |i| i + authority.len())..];
        let request = format!("{method} {path} HTTP/1.1\r\n{}\r\n", head.concat());
        let _ = upstream.write_all(request.as_bytes());
    }
    // What the reader took beyond the head (a body sent at once) goes on first.
    let _ = upstream.write_all(reader.buffer());
    pipe(
        upstream.try_clone().expect("clone"),
        client.try_clone().expect("clone"),
    );
    pipe(client, upstream);
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}
