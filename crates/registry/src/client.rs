//! One repository on one registry: requests with the auth dance (anonymous or basic bearer
//! token, or basic auth) done once and reused.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;

use crate::auth::{Challenge, Credentials};
use crate::error::RegistryError;
use crate::reference::{Reference, Scheme};

/// A request body.
pub(crate) enum Body<'a> {
    /// No body.
    Empty,
    /// Bytes in memory (manifests).
    Bytes(&'a [u8]),
    /// A file, streamed (blobs).
    File(&'a Path),
}

/// A client for one repository.
pub struct Client {
    /// Agents trusting the system, `SSL_CERT_*` and the registry's `certs.d`, through the
    /// environment's proxies; why not, when the certificates cannot be read.
    agents: Result<net::Agents, String>,
    /// The ways to reach the registry, in order; the first that answers is kept.
    schemes: &'static [Scheme],
    /// The API's base URL, found on the first request.
    base: OnceLock<String>,
    /// The reference the URLs are made from.
    reference: Reference,
    registry: String,
    repository: String,
    credentials: Option<Credentials>,
    /// Ask tokens for push as well as pull.
    push: bool,
    /// Ask tokens for delete too (pruning a cache).
    delete: bool,
    authorization: Mutex<Option<String>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("registry", &self.registry)
            .field("repository", &self.repository)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    token: Option<String>,
    access_token: Option<String>,
}

impl Client {
    /// A client for `reference`'s repository; `push` asks for push rights too.
    pub fn new(reference: &Reference, credentials: Option<Credentials>, push: bool) -> Self {
        let limits = net::Limits {
            connect: Duration::from_secs(15),
            read: Some(Duration::from_secs(120)),
            total: None,
            redirects: 5,
        };
        let reference = &Reference {
            insecure: reference.insecure || marked_insecure(&reference.registry),
            ..reference.clone()
        };
        let schemes = reference.schemes();
        let unverified = if schemes.contains(&Scheme::HttpsUnverified) {
            vec![reference.registry.clone()]
        } else {
            Vec::new()
        };
        let agents = net::Trust::system()
            .map(|trust| trust.with_certs_d(&reference.registry))
            .and_then(|trust| {
                net::Agents::new(&trust, limits)?.without_verification_for(
                    &unverified,
                    &trust,
                    "registries.conf or IMGBUILD_INSECURE_REGISTRIES",
                )
            })
            .map_err(|e| e.to_string());
        Self {
            agents,
            schemes,
            base: OnceLock::new(),
            reference: reference.clone(),
            registry: reference.registry.clone(),
            repository: reference.repository.clone(),
            credentials,
            push,
            delete: false,
            authorization: Mutex::new(None),
        }
    }

    /// The same client, asking tokens for delete as well as pull and push.
    pub(crate) fn allowing_delete(mut self) -> Self {
        self.push = true;
        self.delete = true;
        self
    }

    /// `base/v2/<repository>/<path>`.
    pub(crate) fn url(&self, path: &str) -> Result<String, RegistryError> {
        Ok(format!("{}/v2/{}/{path}", self.base()?, self.repository))
    }

    /// Makes an absolute URL of a `Location` header.
    pub(crate) fn absolute(&self, location: &str) -> Result<String, RegistryError> {
        if location.starts_with("http://") || location.starts_with("https://") {
            Ok(location.to_owned())
        } else {
            Ok(format!("{}{location}", self.base()?))
        }
    }

    /// The API's base URL: the first of the registry's schemes that answers `GET /v2/` (any
    /// HTTP status), found once per registry and process. A certificate that is not trusted
    /// ends the search: plain HTTP is tried only where TLS itself failed.
    fn base(&self) -> Result<String, RegistryError> {
        static FOUND: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);
        if let Some(base) = self.base.get() {
            return Ok(base.clone());
        }
        if let [only] = self.schemes {
            return Ok(self
                .base
                .get_or_init(|| self.reference.api_base(*only))
                .clone());
        }
        let known = FOUND
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|m| m.get(&self.registry).cloned());
        let base = match known {
            Some(base) => base,
            None => {
                let base = self.probe()?;
                FOUND
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashMap::new)
                    .insert(self.registry.clone(), base.clone());
                base
            }
        };
        Ok(self.base.get_or_init(|| base).clone())
    }

    fn probe(&self) -> Result<String, RegistryError> {
        let mut failure = None;
        for scheme in self.schemes {
            let base = self.reference.api_base(*scheme);
            let url = format!("{base}/v2/");
            let what = format!("GET {url}");
            match self.agent(&url, &what)?.get(&url).call() {
                Ok(_) | Err(ureq::Error::Status(..)) => return Ok(base),
                Err(ureq::Error::Transport(t)) => {
                    // An untrusted certificate, a refused client certificate or a proxy's
                    // refusal: what plain HTTP would hide.
                    let explained = net::classify(&t) != net::TransportFault::Other;
                    let detail = transport_detail(&t, &url);
                    let error = RegistryError::Transport {
                        what,
                        detail: self.redact(&detail),
                    };
                    if explained && *scheme == Scheme::Https {
                        return Err(error);
                    }
                    failure = Some(error);
                }
            }
        }
        Err(failure.unwrap_or_else(|| RegistryError::Transport {
            what: self.registry.clone(),
            detail: "no way to reach it".into(),
        }))
    }

    fn current_authorization(&self) -> Option<String> {
        self.authorization
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn redact(&self, text: &str) -> String {
        match &self.credentials {
            Some(c) => c.redact(text),
            None => text.to_owned(),
        }
    }

    /// The agent for `url`.
    fn agent(&self, url: &str, what: &str) -> Result<ureq::Agent, RegistryError> {
        let transport = |detail: String| RegistryError::Transport {
            what: what.to_owned(),
            detail,
        };
        self.agents
            .as_ref()
            .map_err(|why| transport(why.clone()))?
            .for_url(url)
            .map_err(|e| transport(e.message))
    }

    /// Sends a request, answering one `401` challenge; any status other than 2xx is an error
    /// (`RegistryError::Status` carries it, so callers can accept a 404).
    pub(crate) fn call(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Body,
    ) -> Result<ureq::Response, RegistryError> {
        let what = format!("{method} {url}");
        for attempt in 0..2 {
            let mut request = self.agent(url, &what)?.request(method, url);
            for (k, v) in headers {
                request = request.set(k, v);
            }
            if let Some(auth) = self.current_authorization() {
                request = request.set("Authorization", &auth);
            }
            let result = match &body {
                Body::Empty => request.call(),
                Body::Bytes(bytes) => request.send_bytes(bytes),
                Body::File(path) => {
                    let file = std::fs::File::open(path)
                        .map_err(crate::error::io(format!("reading {}", path.display())))?;
                    let len = file
                        .metadata()
                        .map_err(crate::error::io(format!("reading {}", path.display())))?
                        .len();
                    request
                        .set("Content-Length", &len.to_string())
                        .send(std::io::BufReader::with_capacity(1 << 20, file))
                }
            };
            match result {
                Ok(response) => return Ok(response),
                Err(ureq::Error::Status(401, response)) if attempt == 0 => {
                    let challenge = response
                        .header("WWW-Authenticate")
                        .and_then(Challenge::parse)
                        .ok_or_else(|| RegistryError::Unauthorized {
                            registry: self.registry.clone(),
                            detail: format!(
                                "{what} answered 401 without a usable WWW-Authenticate challenge"
                            ),
                        })?;
                    self.authenticate(&challenge)?;
                }
                Err(ureq::Error::Status(status @ (401 | 403), response)) => {
                    return Err(self.refused(&what, status, response));
                }
                Err(ureq::Error::Status(status, response)) => {
                    let body = error_message(response);
                    return Err(RegistryError::Status {
                        what,
                        status,
                        body: self.redact(&body),
                    });
                }
                Err(ureq::Error::Transport(t)) => {
                    return Err(RegistryError::Transport {
                        detail: self.redact(&transport_detail(&t, url)),
                        what,
                    })
                }
            }
        }
        Err(RegistryError::Unauthorized {
            registry: self.registry.clone(),
            detail: format!("{what} still asks for credentials after authenticating"),
        })
    }

    fn refused(&self, what: &str, status: u16, response: ureq::Response) -> RegistryError {
        let message = self.redact(&error_message(response));
        let detail = match &self.credentials {
            Some(c) => format!(
                "{what} was refused (HTTP {status}{message}) for user '{}' (credentials from {}); check the user, the password and its rights on {}",
                c.username, c.source, self.repository
            ),
            None => format!(
                "{what} was refused (HTTP {status}{message}) without credentials; put them in REGISTRY_AUTH_FILE or ~/.docker/config.json (for example with `skopeo login {}`)",
                self.registry
            ),
        };
        RegistryError::Unauthorized {
            registry: self.registry.clone(),
            detail,
        }
    }

    /// Answers a challenge: gets a bearer token, or sets basic auth.
    fn authenticate(&self, challenge: &Challenge) -> Result<(), RegistryError> {
        let authorization = match challenge.scheme.as_str() {
            "bearer" => format!("Bearer {}", self.token(challenge)?),
            "basic" => match &self.credentials {
                Some(c) => c.basic(),
                None => {
                    return Err(RegistryError::Unauthorized {
                        registry: self.registry.clone(),
                        detail: format!(
                            "it asks for a user and password; put them in REGISTRY_AUTH_FILE or ~/.docker/config.json (for example with `skopeo login {}`)",
                            self.registry
                        ),
                    })
                }
            },
            other => {
                return Err(RegistryError::Unauthorized {
                    registry: self.registry.clone(),
                    detail: format!("it asks for '{other}' authentication, which imgbuild does not speak (bearer and basic only)"),
                })
            }
        };
        *self.authorization.lock().unwrap_or_else(|e| e.into_inner()) = Some(authorization);
        Ok(())
    }

    fn token(&self, challenge: &Challenge) -> Result<String, RegistryError> {
        let realm = challenge
            .params
            .get("realm")
            .ok_or_else(|| RegistryError::Unauthorized {
                registry: self.registry.clone(),
                detail: "its bearer challenge names no realm (token service)".into(),
            })?;
        let actions = match (self.push, self.delete) {
            (_, true) => "pull,push,delete",
            (true, false) => "pull,push",
            (false, false) => "pull",
        };
        let scope = format!("repository:{}:{actions}", self.repository);
        let what = format!("the token service {realm}");
        let mut request = self.agent(realm, &what)?.get(realm).query("scope", &scope);
        if let Some(service) = challenge.params.get("service") {
            request = request.query("service", service);
        }
        if let Some(c) = &self.credentials {
            request = request.set("Authorization", &c.basic());
        }
        let response = match request.call() {
            Ok(response) => response,
            Err(ureq::Error::Status(status, response)) => {
                return Err(self.refused(&what, status, response));
            }
            Err(ureq::Error::Transport(t)) => {
                return Err(RegistryError::Transport {
                    detail: self.redact(&transport_detail(&t, realm)),
                    what,
                })
            }
        };
        let text = response
            .into_string()
            .map_err(|e| RegistryError::Transport {
                what: what.clone(),
                detail: e.to_string(),
            })?;
        let answer: TokenAnswer =
            serde_json::from_str(&text).map_err(|e| RegistryError::Invalid {
                what: what.clone(),
                detail: format!("not a token answer: {e}"),
            })?;
        answer
            .token
            .or(answer.access_token)
            .ok_or_else(|| RegistryError::Invalid {
                what,
                detail: "the answer holds no token".into(),
            })
    }
}

/// Whether this machine's registries.conf marks `registry` insecure (read once per process; a
/// file that cannot be read is reported where pulls read it).
fn marked_insecure(registry: &str) -> bool {
    static CONF: OnceLock<Option<crate::RegistriesConf>> = OnceLock::new();
    CONF.get_or_init(|| crate::RegistriesConf::load().ok())
        .as_ref()
        .is_some_and(|conf| conf.marks_insecure(registry))
}

/// The registry's error message from an error response, as `: message` (or empty).
fn error_message(response: ureq::Response) -> String {
    let text = response.into_string().unwrap_or_default();
    let parsed: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v["errors"][0]["message"].as_str().map(str::to_owned))
        .or_else(|| {
            parsed
                .as_ref()
                .and_then(|v| v["details"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| text.chars().take(200).collect());
    let message = message.trim();
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

/// A transport error without the URL ureq puts in front (the request already names it); an
/// untrusted certificate or a refusing proxy says what to configure.
fn transport_detail(t: &ureq::Transport, url: &str) -> String {
    let explained = net::explain(t, url);
    if explained != t.to_string() {
        return explained;
    }
    match t.message() {
        Some(message) => format!("{}: {message}", t.kind()),
        None => t.kind().to_string(),
    }
}
