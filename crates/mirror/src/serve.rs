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

/// Serves `root` on `listener` until the process ends, one thread per connection.
pub fn serve(listener: TcpListener, root: &Path) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let root = root.to_owned();
        std::thread::spawn(move || {
            let _ = respond(&mut stream, &root);
        });
    }
}
