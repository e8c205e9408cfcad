//! `uri`: an HTTP request made by the build, its answer registered; the body written to a
//! file of the image with `dest`.
//!
//! An HTTP request made by the build (the machine running it is where Ansible's module
//! runs under the chroot connection too), answered as ansible-core 2.14's module answers: the
//! status judged against `status_code`, the headers as result fields, `json` for a JSON answer,
//! `content` when asked, the body written to `dest` in the image.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::api::{flag, params, ModuleCtx, ModuleError, ModuleResult};
use super::attrs;
use super::spec::{Downloads, FreeForm, ModuleSpec, Params, PlanTime};
use super::types::{Choice, Flag, Int, Mode, Text};
use crate::rootfs::Kind;
use base64::Engine;
use mirror::http::{HttpRequest, HttpResponse};
use serde_json::Map;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

crate::choices!(
    /// How `body` is sent.
    BodyFormat {
        Raw => "raw",
        Json => "json",
        FormUrlencoded => "form-urlencoded",
    }
);

crate::choices!(
    /// Which redirects are followed.
    FollowRedirects {
        Safe => "safe",
        All => "all" | "yes" | "urllib2",
        No => "no" | "none",
    }
);

/// Parameters of `uri`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UriParams {
    /// The http(s) URL.
    pub url: Text,
    /// The method (`GET` by default), one upper-case word.
    pub method: Option<Text>,
    /// The request body: text, or data sent as `body_format` says.
    pub body: Option<Json>,
    /// `raw` (default), `json` or `form-urlencoded`.
    pub body_format: Option<Choice<BodyFormat>>,
    /// Request headers.
    pub headers: Option<serde_json::Map<String, Json>>,
    /// The statuses that mean success (default 200): a number, a list, or `200,201`.
    pub status_code: Option<Json>,
    /// Register the body as `content`.
    pub return_content: Option<Flag>,
    /// Write the body to this file of the image (a folder: the file the server names).
    pub dest: Option<Text>,
    /// Skip the request when this file of the image exists.
    pub creates: Option<Text>,
    /// Skip the request unless this file of the image exists.
    pub removes: Option<Text>,
    /// `safe` (default: GET and HEAD only), `all`, `none`.
    pub follow_redirects: Option<Choice<FollowRedirects>>,
    /// Seconds for the whole request (default 30).
    pub timeout: Option<Int>,
    /// HTTP basic-auth user.
    #[serde(alias = "user")]
    pub url_username: Option<Text>,
    /// HTTP basic-auth password.
    #[serde(alias = "password")]
    pub url_password: Option<Text>,
    /// Send basic auth before being asked.
    pub force_basic_auth: Option<Flag>,
    /// User-Agent (default `ansible-httpget`).
    pub http_agent: Option<Text>,
    /// Verify TLS certificates (always done).
    pub validate_certs: Option<Flag>,
    /// Use proxy environment variables.
    pub use_proxy: Option<Flag>,
    /// Ignore a cached copy (there is none: every request is made).
    pub force: Option<Flag>,
    /// Decompress a gzip transfer encoding.
    pub decompress: Option<Flag>,
    /// Use `~/.netrc` (none in a build).
    pub use_netrc: Option<Flag>,
    /// Mode of `dest`.
    pub mode: Option<Mode>,
    /// Owner of `dest`.
    pub owner: Option<Text>,
    /// Group of `dest`.
    pub group: Option<Text>,
    /// Ansible's unsafe-writes switch (accepted, no effect in a rootfs).
    pub unsafe_writes: Option<Flag>,
}

impl Params for UriParams {
    fn check(&self) -> Result<(), String> {
        let url = self.url.as_str();
        let templated = ansible::template::is_template(url);
        if !templated && !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(format!("url '{url}' must start with http:// or https://"));
        }
        if let Some(method) = &self.method {
            let method = method.as_str();
            let word = !method.is_empty() && method.chars().all(|c| c.is_ascii_uppercase());
            if !word && !ansible::template::is_template(method) {
                return Err(
                    "Parameter 'method' needs to be a single word in uppercase, like GET or POST."
                        .into(),
                );
            }
        }
        if self.validate_certs.as_ref().is_some_and(|v| !v.or(true)) {
            return Err("validate_certs: false is not supported yet: imgbuild always verifies TLS certificates; give the site's CA to the build instead".into());
        }
        Ok(())
    }
}

/// `uri`.
pub static SPEC: ModuleSpec = ModuleSpec {
    name: "uri",
    aliases: &[],
    free_form: FreeForm::KeyValue,
    url_params: &[],
    normalize: super::spec::normalize_with::<UriParams>,
    plan_time: PlanTime::Nothing,
    downloads: Downloads::Nothing,
    family: None,
    controller_folder: true,
    build_expressions: &[],
};

// How it runs in the rootfs.

/// `uri`.
pub fn run(args: &Json, ctx: &ModuleCtx) -> Result<ModuleResult, ModuleError> {
    let p: UriParams = params(SPEC.name, args)?;
    let fs = ctx.target.fs();
    if let Some(creates) = &p.creates {
        if fs.exists(Path::new(creates.as_str()))? {
            let msg = format!("skipped, since '{}' exists", creates.as_str());
            return Ok(ModuleResult::changed(false).with("stdout", msg));
        }
    }
    if let Some(removes) = &p.removes {
        if !fs.exists(Path::new(removes.as_str()))? {
            let msg = format!("skipped, since '{}' does not exist", removes.as_str());
            return Ok(ModuleResult::changed(false).with("stdout", msg));
        }
    }
    if ctx.check {
        // The module does not support check mode: Ansible skips it.
        let mut result = ModuleResult::changed(false);
        result.skipped = true;
        result.msg = Some("remote module (uri) does not support check mode".into());
        return Ok(result);
    }
    let status_code = status_codes(p.status_code.as_ref())?;
    let request = request(&p, ctx)?;
    let started = Instant::now();
    let answer = ctx.downloads.request(&request);
    let elapsed = started.elapsed().as_secs();
    let url = p.url.as_str();
    let mut fields = Map::new();
    fields.insert("url".into(), Json::from(url));
    fields.insert("elapsed".into(), Json::from(elapsed));
    fields.insert("redirected".into(), Json::Bool(false));
    fields.insert("changed".into(), Json::Bool(false));
    let response = match answer {
        Ok(response) => response,
        Err(e) => {
            fields.insert("status".into(), Json::from(-1));
            let msg = format!("Status code was -1 and not {status_code:?}: {e}");
            return Err(failure(msg, fields));
        }
    };
    answered(&p, ctx, &response, &status_code, fields)
}

/// The result (or failure) for the server's answer.
fn answered(
    p: &UriParams,
    ctx: &ModuleCtx,
    response: &HttpResponse,
    status_code: &[i64],
    mut fields: Map<String, Json>,
) -> Result<ModuleResult, ModuleError> {
    for (name, value) in &response.headers {
        let key = name.replace('-', "_");
        let joined = match fields.get(&key).and_then(Json::as_str) {
            Some(before) if response.headers.iter().filter(|h| &h.0 == name).count() > 1 => {
                format!("{before}, {value}")
            }
            _ => value.clone(),
        };
        fields.insert(key, Json::from(joined));
    }
    fields.insert(
        "redirected".into(),
        Json::Bool(response.url != p.url.as_str()),
    );
    fields.insert("url".into(), Json::from(response.url.as_str()));
    fields.insert("status".into(), Json::from(response.status));
    fields.insert("cookies".into(), Json::Object(Map::new()));
    fields.insert("cookies_string".into(), Json::from(""));
    if let Some(location) = fields.get("location").and_then(Json::as_str) {
        let absolute = absolute_location(p.url.as_str(), location);
        fields.insert("location".into(), Json::from(absolute));
    }
    let ok = status_code.contains(&i64::from(response.status));
    let msg = if (200..300).contains(&response.status) {
        let length = header(response, "content-length").unwrap_or("unknown");
        format!("OK ({length} bytes)")
    } else {
        format!("HTTP Error {}: {}", response.status, response.status_text)
    };
    let maybe_json = is_json(&content_type(response));
    let return_content = flag(&p.return_content, false);
    let text = String::from_utf8_lossy(&response.body).into_owned();
    if maybe_json {
        if let Ok(json) = serde_json::from_str::<Json>(&text) {
            fields.insert("json".into(), json);
        }
    }
    if return_content || (!ok && maybe_json) {
        fields.insert("content".into(), Json::from(text));
    }
    let mut changed = false;
    if let Some(dest) = &p.dest {
        let path = dest_file(ctx, Path::new(dest.as_str()), response)?;
        if ok && response.status != 304 {
            changed = write_dest(p, ctx, &path, &response.body)?;
        }
        fields.insert("path".into(), Json::from(path.display().to_string()));
    }
    fields.insert("changed".into(), Json::Bool(changed));
    if !ok {
        let msg = format!(
            "Status code was {} and not {status_code:?}: {msg}",
            response.status
        );
        return Err(failure(msg, fields));
    }
    let mut result = ModuleResult::changed(changed);
    result.msg = Some(msg);
    result.fields = fields;
    result.fields.remove("changed");
    Ok(result)
}

/// The request the parameters describe.
fn request(p: &UriParams, ctx: &ModuleCtx) -> Result<HttpRequest, ModuleError> {
    let method = p.method.as_ref().map_or("GET", |m| m.as_str()).to_owned();
    let mut headers: Vec<(String, String)> = p
        .headers
        .iter()
        .flatten()
        .map(|(name, value)| (name.clone(), python_str(value)))
        .collect();
    let has = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(name))
    };
    let format = match &p.body_format {
        Some(Choice::Known(format)) => *format,
        Some(Choice::Deferred(text)) => {
            return Err(ModuleError::new(format!(
                "body_format '{text}' was not rendered"
            )))
        }
        None => BodyFormat::Raw,
    };
    let body = p.body.as_ref().map(|body| encode_body(body, format));
    let default_type = match format {
        BodyFormat::Json => Some("application/json"),
        BodyFormat::FormUrlencoded => Some("application/x-www-form-urlencoded"),
        BodyFormat::Raw => None,
    };
    if let Some(kind) = default_type.filter(|_| !has(&headers, "content-type")) {
        headers.push(("Content-Type".into(), kind.into()));
    }
    if let Some(user) = &p.url_username {
        let password = p.url_password.as_ref().map_or("", |t| t.as_str());
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{password}", user.as_str()));
        headers.push(("Authorization".into(), format!("Basic {token}")));
    }
    if !has(&headers, "user-agent") {
        let agent = p
            .http_agent
            .as_ref()
            .map_or("ansible-httpget", |a| a.as_str());
        headers.push(("User-Agent".into(), agent.into()));
    }
    if let Some(dest) = &p.dest {
        // Ansible asks for the file only if it changed since the one already there.
        let meta = ctx.target.fs().meta(Path::new(dest.as_str()))?;
        if let Some(meta) = meta.filter(|m| m.kind == Kind::File) {
            headers.push(("If-Modified-Since".into(), http_date(meta.mtime)));
        }
    }
    let follow = match &p.follow_redirects {
        Some(Choice::Known(FollowRedirects::All)) => true,
        Some(Choice::Known(FollowRedirects::No)) => false,
        _ => matches!(method.as_str(), "GET" | "HEAD"),
    };
    let timeout = match &p.timeout {
        Some(Int::Known(secs)) => u64::try_from(*secs).unwrap_or(30),
        _ => 30,
    };
    Ok(HttpRequest {
        method,
        url: p.url.as_str().to_owned(),
        headers,
        body,
        follow_redirects: follow,
        timeout: Duration::from_secs(timeout),
    })
}

/// The body as Ansible sends it: text as it is; data as JSON (`json.dumps`) or form fields.
fn encode_body(body: &Json, format: BodyFormat) -> Vec<u8> {
    if let Json::String(text) = body {
        return text.as_bytes().to_vec();
    }
    match format {
        BodyFormat::Json => ansible::pyjson::Dumps::default().dumps(body).into_bytes(),
        BodyFormat::FormUrlencoded => form_urlencoded(body).into_bytes(),
        BodyFormat::Raw => python_str(body).into_bytes(),
    }
}

/// A mapping (or list of pairs) as `urlencode(..., doseq=True)` writes it; lists repeat the
/// key, `None` values are left out.
fn form_urlencoded(body: &Json) -> String {
    let pairs: Vec<(String, Json)> = match body {
        Json::Object(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Json::Array(items) => items
            .iter()
            .filter_map(|item| match item.as_array()?.as_slice() {
                [k, v] => Some((python_str(k), v.clone())),
                _ => None,
            })
            .collect(),
        other => return python_str(other),
    };
    let mut out = Vec::new();
    for (key, value) in pairs {
        let values = match value {
            Json::Array(list) => list,
            one => vec![one],
        };
        for value in values.iter().filter(|v| !v.is_null()) {
            out.push(format!(
                "{}={}",
                quote_plus(&key),
                quote_plus(&python_str(value))
            ));
        }
    }
    out.join("&")
}

/// Python's `urllib.parse.quote_plus`.
fn quote_plus(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                out.push(char::from(byte))
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Python's `str()` of a value (text as it is).
fn python_str(value: &Json) -> String {
    value
        .as_str()
        .map_or_else(|| ansible::pyjson::repr(value), str::to_owned)
}

/// `status_code`: one number, a list, or comma-separated text (default 200).
fn status_codes(given: Option<&Json>) -> Result<Vec<i64>, ModuleError> {
    let words: Vec<Json> = match given {
        None => return Ok(vec![200]),
        Some(Json::Array(items)) => items.clone(),
        Some(Json::String(text)) => text.split(',').map(|w| Json::from(w.trim())).collect(),
        Some(one) => vec![one.clone()],
    };
    words
        .iter()
        .map(|word| match word {
            Json::Number(n) => n.as_i64(),
            Json::String(s) => s.parse().ok(),
            _ => None,
        })
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| {
            ModuleError::new(format!(
                "status_code: {} is not a list of whole numbers",
                given.map_or_else(String::new, Json::to_string)
            ))
        })
}

fn header<'a>(response: &'a HttpResponse, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(h, _)| h == name)
        .map(|(_, v)| v.as_str())
}

/// The answer's media type, lower case, without its parameters.
fn content_type(response: &HttpResponse) -> String {
    let raw = header(response, "content-type").unwrap_or("application/octet-stream");
    raw.split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A JSON media type as Ansible tells it: subtype `json` or `javascript`, or a `+json` suffix.
fn is_json(content_type: &str) -> bool {
    let sub = content_type.split_once('/').map_or("", |(_, sub)| sub);
    let sub = sub.rsplit_once('+').map_or(sub, |(_, suffix)| suffix);
    matches!(sub, "json" | "javascript")
}

/// A `Location` made absolute against the URL asked, as Ansible's `absolute_location`.
fn absolute_location(url: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    if location.starts_with('/') {
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let host_end = url[scheme_end..]
            .find('/')
            .map_or(url.len(), |i| scheme_end + i);
        return format!("{}{location}", &url[..host_end]);
    }
    let base = url.rsplit_once('/').map_or(url, |(base, _)| base);
    format!("{base}/{location}")
}

/// `dest`, or for a folder the file the answer names (Content-Disposition, else the URL's last
/// part, else `index.html`).
fn dest_file(
    ctx: &ModuleCtx,
    dest: &Path,
    response: &HttpResponse,
) -> Result<PathBuf, ModuleError> {
    let is_dir = ctx
        .target
        .fs()
        .meta_follow(dest)?
        .is_some_and(|m| m.kind == Kind::Dir);
    if !is_dir {
        return Ok(dest.to_owned());
    }
    let from_disposition = header(response, "content-disposition").and_then(|d| {
        d.split(';')
            .filter_map(|p| p.trim().strip_prefix("filename="))
            .map(|name| name.trim_matches('"').to_owned())
            .next()
    });
    let from_url = response
        .url
        .split(['?', '#'])
        .next()
        .and_then(|u| u.trim_end_matches('/').rsplit('/').next())
        .filter(|name| !name.is_empty() && !name.contains(':'))
        .map(str::to_owned);
    let name = from_disposition
        .or(from_url)
        .unwrap_or_else(|| "index.html".into());
    Ok(dest.join(name))
}

/// Writes the body when it differs from the file there; the task reports a change either way,
/// as Ansible's module does for every answer it writes.
fn write_dest(
    p: &UriParams,
    ctx: &ModuleCtx,
    path: &Path,
    body: &[u8],
) -> Result<bool, ModuleError> {
    let fs = ctx.target.fs();
    let same = fs
        .meta(path)?
        .filter(|m| m.kind == Kind::File)
        .map(|_| fs.read(path))
        .transpose()?
        .is_some_and(|there| there == body);
    if !same {
        fs.write_atomic(path, body, None)?;
    }
    attrs::apply(fs, path, &p.owner, &p.group, &p.mode, false)?;
    Ok(true)
}

fn failure(msg: String, fields: Map<String, Json>) -> ModuleError {
    let mut error = ModuleError::new(msg);
    error.fields = fields;
    error
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) of seconds since the epoch.
fn http_date(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    let (year, month, day) = ansible::template::now::civil(days);
    let weekday = DAYS[usize::try_from(days.rem_euclid(7)).unwrap_or(0)];
    let month = MONTHS[usize::try_from(month.saturating_sub(1)).unwrap_or(0) % 12];
    format!(
        "{weekday}, {day:02} {month} {year} {:02}:{:02}:{:02} GMT",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn http_dates_are_rfc_1123() {
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn bodies_are_encoded_as_ansible_sends_them() {
        let data = json!({"name": "a b", "tags": ["x", "y&z"], "none": null});
        assert_eq!(
            String::from_utf8(encode_body(&data, BodyFormat::FormUrlencoded)).expect("utf8"),
            "name=a+b&tags=x&tags=y%26z"
        );
        assert_eq!(
            String::from_utf8(encode_body(&json!({"a": [1, true]}), BodyFormat::Json))
                .expect("utf8"),
            "{\"a\": [1, true]}"
        );
        assert_eq!(encode_body(&json!("as is"), BodyFormat::Json), b"as is");
    }

    #[test]
    fn status_codes_take_ansibles_list_forms() {
        assert_eq!(status_codes(None).expect("default"), vec![200]);
        assert_eq!(status_codes(Some(&json!(201))).expect("one"), vec![201]);
        assert_eq!(
            status_codes(Some(&json!("200, 304"))).expect("text"),
            vec![200, 304]
        );
        assert_eq!(
            status_codes(Some(&json!([200, "201"]))).expect("list"),
            vec![200, 201]
        );
        assert!(status_codes(Some(&json!(["ok"]))).is_err());
    }

    #[test]
    fn json_media_types_and_locations() {
        assert!(is_json("application/json"));
        assert!(is_json("application/vnd.github+json"));
        assert!(is_json("text/javascript"));
        assert!(!is_json("text/plain"));
        assert_eq!(
            absolute_location("http://h:1/a/b?x=1", "/c"),
            "http://h:1/c"
        );
        assert_eq!(absolute_location("http://h/a/b", "c"), "http://h/a/c");
        assert_eq!(
            absolute_location("http://h/a", "https://o/p"),
            "https://o/p"
        );
    }
}
