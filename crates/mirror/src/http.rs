//! One HTTP request as a task asks for it (Ansible's `uri`): any method, headers and body,
//! redirects followed or not, and the answer whatever its status, for the task to judge.

use std::io::Read;
use std::time::Duration;

/// Redirects followed at most, as Ansible's urllib handler (10 in `RedirectHandler`).
const MAX_REDIRECTS: u32 = 10;

/// A request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL.
    pub url: String,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// Follow redirects (3xx with a Location).
    pub follow_redirects: bool,
    /// Time for the whole request.
    pub timeout: Duration,
}

/// The server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The reason phrase (`OK`).
    pub status_text: String,
    /// The URL that answered (after redirects).
    pub url: String,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// A request that got no answer.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{message}")]
pub struct HttpError {
    /// What went wrong, credentials in the URL redacted.
    pub message: String,
}

/// Sends `request` and returns the answer, an error status included.
pub fn send(request: &HttpRequest) -> Result<HttpResponse, HttpError> {
    let limits = net::Limits {
        connect: request.timeout,
        read: None,
        total: Some(request.timeout),
        redirects: if request.follow_redirects {
            MAX_REDIRECTS
        } else {
            0
        },
    };
    let failed = |message: String| HttpError {
        message: crate::redact_credentials(&message),
    };
    let agent = net::Agents::system(limits)
        .map_err(|e| failed(e.to_string()))?
        .for_url(&request.url)
        .map_err(|e| failed(e.message))?;
    let mut call = agent.request(&request.method, &request.url);
    for (name, value) in &request.headers {
        call = call.set(name, value);
    }
    let answered = match &request.body {
        Some(body) => call.send_bytes(body),
        None => call.call(),
    };
    let response = match answered {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(ureq::Error::Transport(e)) => {
            let explained = net::explain(&e, &request.url);
            let message = if explained != e.to_string() {
                explained
            } else {
                e.message().map_or_else(|| e.to_string(), str::to_owned)
            };
            return Err(failed(format!("Request failed: {message}")));
        }
    };
    let headers = response
        .headers_names()
        .into_iter()
        .filter_map(|name| {
            let value = response.header(&name)?.to_owned();
            Some((name.to_ascii_lowercase(), value))
        })
        .collect();
    let (status, status_text, url) = (
        response.status(),
        response.status_text().to_owned(),
        response.get_url().to_owned(),
    );
    let mut body = Vec::new();
    response
        .into_reader()
        .read_to_end(&mut body)
        .map_err(|e| HttpError {
            message: crate::redact_credentials(&format!("reading the answer of {url}: {e}")),
        })?;
    Ok(HttpResponse {
        status,
        status_text,
        url,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// A server answering each connection with the next of `answers`, returning the requests.
    fn serve(answers: Vec<&'static str>) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for answer in answers {
                let (mut stream, _) = listener.accept().expect("accept");
                seen.push(read_request(&mut stream));
                stream.write_all(answer.as_bytes()).expect("write");
            }
            seen
        });
        (url, handle)
    }

    /// A whole request: its head, then as many body bytes as its Content-Length says (the
    /// client may write them apart).
    fn read_request(stream: &mut std::net::TcpStream) -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    return text;
                }
            }
            let n = stream.read(&mut buf).expect("read");
            if n == 0 {
                return text;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }

    fn request(url: &str, follow: bool) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: url.into(),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(b"{\"a\": 1}".to_vec()),
            follow_redirects: follow,
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn an_error_status_is_an_answer_with_its_headers_and_body() {
        let (url, server) = serve(vec![
            "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nX-Thing: yes\r\nConnection: close\r\n\r\ngone",
        ]);
        let answer = send(&request(&format!("{url}/x"), true)).expect("answer");
        assert_eq!(answer.status, 404);
        assert_eq!(answer.status_text, "Not Found");
        assert_eq!(answer.body, b"gone");
        assert!(answer.headers.contains(&("x-thing".into(), "yes".into())));
        let seen = server.join().expect("server");
        assert!(seen[0].starts_with("POST /x HTTP/1.1"), "{}", seen[0]);
        assert!(seen[0].ends_with("{\"a\": 1}"), "{}", seen[0]);
    }

    #[test]
    fn a_redirect_not_followed_is_the_answer() {
        let (url, server) = serve(vec![
            "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ]);
        let answer = send(&request(&url, false)).expect("answer");
        assert_eq!(answer.status, 302);
        assert!(answer
            .headers
            .contains(&("location".into(), "/elsewhere".into())));
        server.join().expect("server");
    }

    #[test]
    fn no_server_is_an_error_without_the_credentials() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let mut req = request(&format!("http://user:secret@127.0.0.1:{port}/"), true);
        req.body = None;
        let err = send(&req).expect_err("refused");
        assert!(!err.message.contains("secret"), "{}", err.message);
    }
}
