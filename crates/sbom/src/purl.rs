//! Package URLs (purl spec): `pkg:deb/debian/NAME@VERSION?arch=...&distro=...`.

/// Percent-encodes what the purl spec does not allow bare in a name, version or qualifier
/// value (everything but ASCII letters, digits and `.-_~`).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b".-_~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A package's purl: `kind` (`deb`, `rpm`), `namespace` (the vendor: `debian`, `ubuntu`),
/// qualifiers sorted by key as the spec asks, empty ones left out.
pub fn package(
    kind: &str,
    namespace: &str,
    name: &str,
    version: &str,
    qualifiers: &[(&str, &str)],
) -> String {
    let mut qualifiers: Vec<&(&str, &str)> =
        qualifiers.iter().filter(|(_, v)| !v.is_empty()).collect();
    qualifiers.sort();
    let query: Vec<String> = qualifiers
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    let mut purl = format!(
        "pkg:{kind}/{}/{}@{}",
        encode(&namespace.to_lowercase()),
        encode(name),
        encode(version)
    );
    if !query.is_empty() {
        purl.push('?');
        purl.push_str(&query.join("&"));
    }
    purl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_and_plus_signs_are_encoded_and_qualifiers_sorted() {
        assert_eq!(
            package(
                "deb",
                "Debian",
                "libc6",
                "1:2.36-9+deb12u4",
                &[("distro", "debian-12"), ("arch", "amd64")]
            ),
            "pkg:deb/debian/libc6@1%3A2.36-9%2Bdeb12u4?arch=amd64&distro=debian-12"
        );
        assert_eq!(
            package("deb", "debian", "a", "1", &[("distro", "")]),
            "pkg:deb/debian/a@1"
        );
    }
}
