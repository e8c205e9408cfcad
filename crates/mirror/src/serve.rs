//! A static file server for a local mirror (the demo's and the tests' fixture mirror): GET and
//! HEAD of files below a folder, with Range support, on a loopback address.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

fn respond(stream: &mut TcpStream, root: &Path) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut range: Option<u64> = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
            range = value.trim().trim_end_matches('-').parse().ok();
        }
    }
    let mut words = request.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or("/"));
    let path = target.split('?').next().unwrap_or("/");
    let rel: PathBuf = Path::new(path)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    let escapes = Path::new(path)
        .components()
        .any(|c| c == Component::ParentDir);
    let file = root.join(rel);
    let Ok(mut f) = std::fs::File::open(&file).map_err(|_| ()).and_then(|f| {
        if !escapes && file.is_file() {
            Ok(f)
        } else {
            Err(())
        }
    }) else {
        return write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
    };
    let size = f.metadata()?.len();
    let start = range.filter(|s| *s < size).unwrap_or(0);
    if start > 0 {
        write!(
            stream,
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{}/{size}\r\n",
            size - 1
        )?;
    } else {
        write!(stream, "HTTP/1.1 200 OK\r\n")?;
    }
    write!(
        stream,
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        size - start
    )?;
    if method != "HEAD" {
        f.seek(std::io::SeekFrom::Start(start))?;
        std::io::copy(&mut Read::by_ref(&mut f).take(size - start), stream)?;
    }
    Ok(())
}

/// At most this many connections are served at once; one more is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 64;

/// Serves `root` on `listener` until the process ends, one thread per connection, at most
/// [`MAX_CONNECTIONS`] at once.
pub fn serve(listener: TcpListener, root: &Path) {
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if open.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            let _ = write!(
                stream,
                "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            continue;
        }
        let root = root.to_owned();
        let open = open.clone();
        std::thread::spawn(move || {
            let _ = respond(&mut stream, &root);
            open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_connection_over_the_bound_is_told_to_come_back() {
        let dir = tempfile::tempdir().expect("a folder");
        std::fs::write(dir.path().join("a.txt"), "a").expect("written");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let root = dir.path().to_owned();
        std::thread::spawn(move || serve(listener, &root));
        // Connections that never send their request hold their slot.
        let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut over = TcpStream::connect(addr).expect("connect");
        let mut answer = String::new();
        over.read_to_string(&mut answer).expect("answer");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        drop(held);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut again = TcpStream::connect(addr).expect("connect");
        write!(again, "GET /a.txt HTTP/1.1\r\n\r\n").expect("request");
        let mut answer = String::new();
        again.read_to_string(&mut answer).expect("answer");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}
