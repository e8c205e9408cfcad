//! Asking the mirror whether an artifact is there, and how big it is, without downloading it.

use std::time::Duration;

/// What the mirror said about one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    /// It answered 2xx; the size when it said.
    Present(Option<u64>),
    /// It answered with this HTTP status (404, 403, 500, ...).
    Missing(u16),
    /// No answer: connection refused, timeout, bad redirect.
    Unreachable(String),
}

/// Probes URLs with `HEAD`, falling back to a one-byte ranged `GET` for servers that refuse
/// `HEAD`.
#[derive(Debug)]
pub struct Prober {
    agent: ureq::Agent,
}

impl Default for Prober {
    fn default() -> Self {
        Self::new(Duration::from_secs(15))
    }
}

impl Prober {
    /// A prober that gives up on a URL after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(timeout)
            .timeout(timeout)
            .redirects(5)
            .build();
        Self { agent }
    }

    /// Whether `url` is there, and its size.
    pub fn probe(&self, url: &str) -> Presence {
        match self.agent.head(url).call() {
            Ok(response) => Presence::Present(content_length(&response)),
            Err(ureq::Error::Status(405 | 501, _)) => self.ranged_get(url),
            Err(ureq::Error::Status(code, _)) => Presence::Missing(code),
            Err(ureq::Error::Transport(e)) => Presence::Unreachable(transport_error(&e)),
        }
    }

    fn ranged_get(&self, url: &str) -> Presence {
        match self.agent.get(url).set("Range", "bytes=0-0").call() {
            Ok(response) => {
                let total = response
                    .header("Content-Range")
                    .and_then(|r| r.rsplit_once('/'))
                    .and_then(|(_, total)| total.trim().parse().ok());
                let size = if response.status() == 206 {
                    total
                } else {
                    content_length(&response)
                };
                Presence::Present(size)
            }
            Err(ureq::Error::Status(code, _)) => Presence::Missing(code),
            Err(ureq::Error::Transport(e)) => Presence::Unreachable(transport_error(&e)),
        }
    }
}

/// A transport error without the URL (the caller shows it once).
fn transport_error(e: &ureq::Transport) -> String {
    let mut text = e.kind().to_string();
    if let Some(message) = e.message() {
        text.push_str(&format!(": {message}"));
    }
    if let Some(source) = std::error::Error::source(e) {
        text.push_str(&format!(": {source}"));
    }
    text
}

fn content_length(response: &ureq::Response) -> Option<u64> {
    response
        .header("Content-Length")
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A server answering each connection with the next canned response.
    fn server(responses: Vec<&'static str>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for response in responses {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(response.as_bytes());
            }
        });
        format!("http://{addr}/a.tgz")
    }

    #[test]
    fn head_gives_the_size() {
        let url = server(vec!["HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"]);
        assert_eq!(Prober::default().probe(&url), Presence::Present(Some(1234)));
    }

    #[test]
    fn missing_is_the_status() {
        let url = server(vec!["HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"]);
        assert_eq!(Prober::default().probe(&url), Presence::Missing(404));
    }

    #[test]
    fn falls_back_to_a_ranged_get() {
        let url = server(vec![
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-0/777\r\nContent-Length: 1\r\n\r\nx",
        ]);
        assert_eq!(Prober::default().probe(&url), Presence::Present(Some(777)));
    }

    #[test]
    fn refused_connection_is_unreachable() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let presence = Prober::default().probe(&format!("http://{addr}/x"));
        assert!(matches!(presence, Presence::Unreachable(_)), "{presence:?}");
    }
}
