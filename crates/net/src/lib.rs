//! One HTTP client setup for everything imgbuild downloads, asks or pushes: the certificates a
//! site's machines trust (the system store, `SSL_CERT_FILE`, `SSL_CERT_DIR`, and for a
//! registry its `certs.d` folder, as containers/image reads it) beside the public roots, and
//! the proxies the environment names (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`, as Go's and so
//! podman's clients read them).

mod proxy;
mod trust;
mod unverified;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use proxy::{proxy_for, ProxyEnv};
pub use trust::{certs_d_dirs, Trust, TrustError};

/// Timeouts and redirects of the agents a client uses.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to connect.
    pub connect: Duration,
    /// Time without a byte read (a stall).
    pub read: Option<Duration>,
    /// Time for a whole request.
    pub total: Option<Duration>,
    /// Redirects followed at most.
    pub redirects: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            read: Some(Duration::from_secs(120)),
            total: None,
            redirects: 5,
        }
    }
}

/// Agents for URLs: each goes direct or through the proxy the environment names for it, and
/// trusts what the site trusts.
#[derive(Clone)]
pub struct Agents {
    limits: Limits,
    tls: Arc<rustls::ClientConfig>,
    proxies: ProxyEnv,
    /// Hosts (`host[:port]`, lower case) whose certificates are not verified, and the TLS
    /// setup used for them.
    unverified: Option<(Vec<String>, Arc<rustls::ClientConfig>)>,
    /// One agent per proxy (`None`: direct) and verification, made when first needed.
    built: Arc<Mutex<BuiltAgents>>,
}

/// Agents by proxy (`None`: direct) and whether they verify nothing.
type BuiltAgents = HashMap<(Option<String>, bool), ureq::Agent>;

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Agents {
    /// Agents trusting `trust` with `limits`, proxies from the environment.
    pub fn new(trust: &Trust, limits: Limits) -> Result<Self, TrustError> {
        Ok(Self::with_tls(trust.client_config()?, limits))
    }

    fn with_tls(tls: Arc<rustls::ClientConfig>, limits: Limits) -> Self {
        Self {
            limits,
            tls,
            proxies: ProxyEnv::from_env(),
            unverified: None,
            built: Arc::default(),
        }
    }

    /// The same agents taking any certificate from `hosts` (`host[:port]`), as a site's
    /// `insecure = true` asks; each host is warned about once per process, on standard error.
    pub fn without_verification_for(
        mut self,
        hosts: &[String],
        trust: &Trust,
        marked_in: &str,
    ) -> Result<Self, TrustError> {
        if hosts.is_empty() {
            return Ok(self);
        }
        for host in hosts {
            warn_unverified(host, marked_in);
        }
        let hosts = hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        self.unverified = Some((hosts, trust.unverified_config()?));
        self.built = Arc::default();
        Ok(self)
    }

    /// Agents trusting the system and `SSL_CERT_*`, with `limits`. The system's certificates
    /// are read once per process: every `uri` request and lookup makes its own agents.
    pub fn system(limits: Limits) -> Result<Self, TrustError> {
        static SYSTEM: std::sync::OnceLock<Result<Arc<rustls::ClientConfig>, TrustError>> =
            std::sync::OnceLock::new();
        let tls = SYSTEM
            .get_or_init(|| Trust::system()?.client_config())
            .clone()?;
        Ok(Self::with_tls(tls, limits))
    }

    /// The same agents with other proxy settings (tests, a config file's).
    pub fn with_proxies(mut self, proxies: ProxyEnv) -> Self {
        self.proxies = proxies;
        self.built = Arc::default();
        self
    }

    /// The agent for `url`.
    pub fn for_url(&self, url: &str) -> Result<ureq::Agent, ProxyError> {
        let proxy = proxy_for(&self.proxies, url);
        let unverified = self.unverified.as_ref().filter(|(hosts, _)| {
            let authority = host_of(url).to_ascii_lowercase();
            let host = authority
                .rsplit_once(':')
                .map_or(authority.as_str(), |(h, _)| h);
            hosts.iter().any(|h| *h == authority || h == host)
        });
        let key = (proxy.clone(), unverified.is_some());
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(agent) = built.get(&key) {
            return Ok(agent.clone());
        }
        let tls = unverified.map_or(&self.tls, |(_, tls)| tls);
        let mut builder = ureq::AgentBuilder::new()
            .tls_config(tls.clone())
            .timeout_connect(self.limits.connect)
            .redirects(self.limits.redirects)
            .try_proxy_from_env(false);
        if let Some(read) = self.limits.read {
            builder = builder.timeout_read(read);
        }
        if let Some(total) = self.limits.total {
            builder = builder.timeout(total);
        }
        if let Some(address) = &proxy {
            let parsed = ureq::Proxy::new(address).map_err(|e| ProxyError {
                message: format!(
                    "the proxy '{}' for {url} is not usable ({e}); fix HTTPS_PROXY/HTTP_PROXY",
                    redact(address)
                ),
            })?;
            builder = builder.proxy(parsed);
        }
        let agent = builder.build();
        built.insert(key, agent.clone());
        Ok(agent)
    }
}

/// Warns, once per process and host, that `host`'s certificates are not verified.
fn warn_unverified(host: &str, marked_in: &str) {
    static WARNED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !warned.iter().any(|h| h == host) {
        warned.push(host.to_owned());
        eprintln!("warning: the TLS certificate of {host} is not verified (insecure = true in {marked_in}): anyone on the path can read and change what is sent; give the site's CA instead");
    }
}

/// A proxy setting that cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{message}")]
pub struct ProxyError {
    /// What is wrong and what to do.
    pub message: String,
}

/// A URL with its `user:password@` taken out.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        (None, Some(at)) => format!("***@{}", &url[at + 1..]),
        _ => url.to_owned(),
    }
}

/// Why a request failed at its transport, where a person has something to set right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFault {
    /// The server's certificate chains to no root this machine trusts, or is invalid for it.
    UntrustedCertificate,
    /// The server refused the connection for want of a client certificate it accepts.
    ClientCertificateRefused,
    /// The proxy refused to connect or to authenticate the request.
    ProxyRefused,
    /// Anything else (refused connection, timeout, DNS, ...): the transport's own words.
    Other,
}

/// The fault behind `error`, read from the TLS error it carries (rustls's, inside the
/// `io::Error` ureq wraps it in) or ureq's own kind, never from its text.
pub fn classify(error: &ureq::Transport) -> TransportFault {
    if let Some(tls) = tls_error(error) {
        use rustls::AlertDescription as Alert;
        match tls {
            rustls::Error::InvalidCertificate(_) => return TransportFault::UntrustedCertificate,
            rustls::Error::AlertReceived(
                Alert::CertificateRequired | Alert::BadCertificate | Alert::UnknownCA,
            ) => return TransportFault::ClientCertificateRefused,
            _ => {}
        }
    }
    match error.kind() {
        ureq::ErrorKind::ProxyConnect | ureq::ErrorKind::ProxyUnauthorized => {
            TransportFault::ProxyRefused
        }
        _ => TransportFault::Other,
    }
}

/// The rustls error somewhere in `error`'s chain of causes.
fn tls_error(error: &ureq::Transport) -> Option<&rustls::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(current) = cause {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let inner = current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        if inner.is_some() {
            return inner;
        }
        cause = current.source();
    }
    None
}

/// What a failed request's transport error means for a person: an untrusted certificate names
/// the host and where to give the site's CA; a refused client certificate where to put one; a
/// proxy that refused says so. Any other error is the transport's own words.
pub fn explain(error: &ureq::Transport, url: &str) -> String {
    let text = error.to_string();
    let host = host_of(url);
    match classify(error) {
        TransportFault::UntrustedCertificate => format!(
            "the TLS certificate of {host} is not trusted ({}): give the site's CA with SSL_CERT_FILE, add it to the system's store (update-ca-certificates, update-ca-trust), or for a registry to certs.d/{host}/ca.crt",
            error.message().unwrap_or("unknown issuer")
        ),
        TransportFault::ClientCertificateRefused => format!(
            "{host} refused the TLS connection for want of a client certificate it accepts ({text}): for a registry put it in certs.d/{host}/client.cert with its key as client.key"
        ),
        TransportFault::ProxyRefused => format!(
            "the proxy for {host} refused the request ({text}); check HTTPS_PROXY/HTTP_PROXY and NO_PROXY"
        ),
        TransportFault::Other => text,
    }
}

/// `host[:port]` of a URL.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_redaction() {
        assert_eq!(
            host_of("https://u:p@mirror.site:8443/x?y"),
            "mirror.site:8443"
        );
        assert_eq!(host_of("http://127.0.0.1/"), "127.0.0.1");
        assert_eq!(
            redact("http://user:secret@proxy:3128"),
            "http://***@proxy:3128"
        );
        assert_eq!(redact("http://proxy:3128"), "http://proxy:3128");
    }
}
