//! `lookup('url', ...)`: a GET of each URL when the task runs, as ansible-core 2.14's lookup
//! makes it from the controller (here: the machine running the build). The plan leaves a
//! template that uses it to the build, which makes the request; each answer is its lines
//! (`split_lines`, the default) or its whole text.

use std::time::Duration;

use base64::Engine;
use minijinja::value::Kwargs;
use minijinja::{Error, State, Value};

use super::lookup_state::lookup_failed;

/// The options of the lookup this one takes.
struct Options {
    split_lines: bool,
    headers: Vec<(String, String)>,
    follow: bool,
    timeout: Duration,
}

fn options(kwargs: &Kwargs) -> Result<Options, Error> {
    if kwargs.get::<Option<bool>>("validate_certs")? == Some(false) {
        return Err(lookup_failed(
            "lookup('url'): validate_certs=False is not supported yet: imgbuild always verifies TLS certificates",
        ));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(given) = kwargs.get::<Option<Value>>("headers")? {
        for name in given.try_iter()? {
            let value = given.get_item(&name)?;
            headers.push((name.to_string(), value.to_string()));
        }
    }
    let agent: Option<String> = kwargs.get("http_agent")?;
    headers.push((
        "User-Agent".into(),
        agent.unwrap_or_else(|| "ansible-httpget".into()),
    ));
    let username: Option<String> = kwargs.get("username")?;
    let password: Option<String> = kwargs.get("password")?;
    let _: Option<bool> = kwargs.get("force_basic_auth")?;
    let _: Option<bool> = kwargs.get("force")?;
    let _: Option<bool> = kwargs.get("use_proxy")?;
    if let Some(user) = username {
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{user}:{}", password.unwrap_or_default()));
        headers.push(("Authorization".into(), format!("Basic {token}")));
    }
    let follow: Option<String> = kwargs.get("follow_redirects")?;
    let timeout: Option<f64> = kwargs.get("timeout")?;
    Ok(Options {
        split_lines: kwargs.get::<Option<bool>>("split_lines")?.unwrap_or(true),
        headers,
        follow: !matches!(follow.as_deref(), Some("no" | "none")),
        timeout: Duration::from_secs_f64(timeout.unwrap_or(10.0).max(0.1)),
    })
}

/// The plugin's error as Ansible's templar reports an `AnsibleError` a lookup raised.
fn unhandled(message: String) -> Error {
    lookup_failed(format!(
        "An unhandled exception occurred while running the lookup plugin 'url'. Error was a <class 'ansible.errors.AnsibleError'>, original message: {message}. {message}"
    ))
}

/// `lookup('url', url, ...)`.
pub fn url(state: &State, terms: &[String], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    // Ansible asks when the task runs: where the plan names this variable as known only
    // then, the render is left to the build.
    let _ = state.lookup(super::now::BUILD_TIME);
    let options = options(kwargs)?;
    let mut found = Vec::new();
    for term in terms {
        let request = mirror::http::HttpRequest {
            method: "GET".into(),
            url: term.clone(),
            headers: options.headers.clone(),
            body: None,
            follow_redirects: options.follow,
            timeout: options.timeout,
        };
        let answer = mirror::http::send(&request)
            .map_err(|e| unhandled(format!("Failed lookup url for {term} : {e}")))?;
        if answer.status >= 400 {
            return Err(unhandled(format!(
                "Received HTTP error for {term} : HTTP Error {}: {}",
                answer.status, answer.status_text
            )));
        }
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        if options.split_lines {
            found.extend(text.lines().map(Value::from));
        } else {
            found.push(Value::from(text));
        }
    }
    Ok(found)
}
