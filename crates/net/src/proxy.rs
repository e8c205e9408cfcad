//! Which proxy a URL goes through, as Go's `http.ProxyFromEnvironment` (and so podman, skopeo
//! and Warewulf) decides: `HTTPS_PROXY` for https, `HTTP_PROXY` for http (upper case first,
//! then lower), none for a host `NO_PROXY` names (a domain and its subdomains, a host:port, an
//! address, `*`) or for loopback.

use std::net::IpAddr;

/// The proxy settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// For http URLs.
    pub http: Option<String>,
    /// For https URLs.
    pub https: Option<String>,
    /// Hosts reached directly.
    pub no_proxy: Vec<String>,
}

fn var(names: [&str; 2]) -> Option<String> {
    names
        .iter()
        .find_map(|name| std::env::var(name).ok())
        .filter(|value| !value.trim().is_empty())
}

impl ProxyEnv {
    /// From the environment.
    pub fn from_env() -> Self {
        Self::new(
            var(["HTTP_PROXY", "http_proxy"]),
            var(["HTTPS_PROXY", "https_proxy"]),
            &var(["NO_PROXY", "no_proxy"]).unwrap_or_default(),
        )
    }

    /// From values (`no_proxy` comma-separated).
    pub fn new(http: Option<String>, https: Option<String>, no_proxy: &str) -> Self {
        Self {
            http,
            https,
            no_proxy: no_proxy
                .split(',')
                .map(|entry| entry.trim().to_ascii_lowercase())
                .filter(|entry| !entry.is_empty())
                .collect(),
        }
    }
}

/// Whether `NO_PROXY` says `host` (`port`) is reached directly.
fn excluded(no_proxy: &[String], host: &str, port: Option<&str>) -> bool {
    no_proxy.iter().any(|entry| {
        if entry == "*" {
            return true;
        }
        let (name, entry_port) = match entry.rsplit_once(':') {
            Some((name, p)) if !name.contains(':') || name.starts_with('[') => (name, Some(p)),
            _ => (entry.as_str(), None),
        };
        if entry_port.is_some() && entry_port != port {
            return false;
        }
        let name = name.trim_start_matches("*.").trim_start_matches('.');
        let name = name.trim_start_matches('[').trim_end_matches(']');
        host == name || host.ends_with(&format!(".{name}"))
    })
}

/// The proxy `url` goes through, if any (`http://` added to one given without a scheme).
pub fn proxy_for(env: &ProxyEnv, url: &str) -> Option<String> {
    let (scheme, _) = url.split_once("://")?;
    let proxy = match scheme.to_ascii_lowercase().as_str() {
        "https" => env.https.as_ref()?,
        "http" => env.http.as_ref()?,
        _ => return None,
    };
    let authority = super::host_of(url).to_ascii_lowercase();
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, rest)) => (host.to_owned(), rest.strip_prefix(':').map(str::to_owned)),
            None => (v6.to_owned(), None),
        },
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port.to_owned())),
            None => (authority.clone(), None),
        },
    };
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback || excluded(&env.no_proxy, &host, port.as_deref()) {
        return None;
    }
    Some(if proxy.contains("://") {
        proxy.clone()
    } else {
        format!("http://{proxy}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(no_proxy: &str) -> ProxyEnv {
        ProxyEnv::new(
            Some("proxy.site:3128".into()),
            Some("http://secure-proxy.site:3129".into()),
            no_proxy,
        )
    }

    #[test]
    fn each_scheme_has_its_proxy() {
        let e = env("");
        assert_eq!(
            proxy_for(&e, "http://mirror.site/x").as_deref(),
            Some("http://proxy.site:3128")
        );
        assert_eq!(
            proxy_for(&e, "https://registry.site:5000/v2/").as_deref(),
            Some("http://secure-proxy.site:3129")
        );
        assert_eq!(proxy_for(&ProxyEnv::default(), "https://a.b/"), None);
    }

    #[test]
    fn no_proxy_and_loopback_go_direct() {
        let e = env("site.internal, .lab, registry.example:5000, 10.1.2.3");
        for direct in [
            "http://mirror.site.internal/x",
            "http://site.internal/x",
            "https://a.b.lab/",
            "https://registry.example:5000/v2/",
            "http://10.1.2.3:8080/",
            "http://127.0.0.1:8080/",
            "http://localhost/",
            "http://[::1]:80/",
        ] {
            assert_eq!(proxy_for(&e, direct), None, "{direct}");
        }
        for proxied in [
            "https://registry.example:5001/v2/",
            "http://notsite.internal.com/",
            "http://10.1.2.4/",
        ] {
            assert!(proxy_for(&e, proxied).is_some(), "{proxied}");
        }
        assert_eq!(proxy_for(&env("*"), "http://anything/"), None);
    }
}
