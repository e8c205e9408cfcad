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
    agents: Option<net::Agents>,
}

impl Default for Prober {
    fn default() -> Self {
        Self::new(Duration::from_secs(15))
    }
}

impl Prober {
    /// A prober that gives up on a URL after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        let limits = net::Limits {
            connect: timeout,
            read: None,
            total: Some(timeout),
            redirects: 5,
        };
        // Certificates that cannot be read make every probe unreachable, saying why.
        Self {
            agents: net::Agents::system(limits).ok(),
        }
    }

    fn agent(&self, url: &str) -> Result<ureq::Agent, Presence> {
        let agents = self.agents.as_ref().ok_or_else(|| {
            Presence::Unreachable(match net::Trust::system().and_then(|t| t.client_config()) {
                Err(e) => e.to_string(),
                Ok(_) => "the TLS setup failed".into(),
            })
        })?;
        agents
            .for_url(url)
            .map_err(|e| Presence::Unreachable(e.message))
    }

    /// Whether `url` is there, and its size.
    pub fn probe(&self, url: &str) -> Presence {
        let agent = match self.agent(url) {
            Ok(agent) => agent,
            Err(presence) => return presence,
        };
        match agent.head(url).call() {
            Ok(response) => Presence::Present(content_length(&response)),
            Err(ureq::Error::Status(405 | 501, _)) => Self::ranged_get(&agent, url),
            Err(ureq::Error::Status(code, _)) => Presence::Missing(code),
            Err(ureq::Error::Transport(e)) => Presence::Unreachable(transport_error(&e, url)),
        }
    }

    fn ranged_get(agent: &ureq::Agent, url: &str) -> Presence {
        match agent.get(url).set("Range", "bytes=0-0").call() {
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
            Err(ureq::Error::Transport(e)) => Presence::Unreachable(transport_error(&e, url)),
        }
    }
}

/// A transport error without the URL (the caller shows it once); an untrusted certificate or
/// a refusing proxy says what to configure.
fn transport_error(e: &ureq::Transport, url: &str) -> String {
    let explained = net::explain(e, url);
    if explained != e.to_string() {
        return explained;
    }
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
