//! Whether a requirement (`name`, `name>=1.2,<2`, `name[extra]==1.0`) is met by what `pip list
//! --format=freeze` lists, as ansible-core's pip module asks in check mode: names compared as
//! PEP 503 normalises them, versions by their release numbers.

use std::cmp::Ordering;

/// PEP 503's normal form of a project name.
fn canonical(name: &str) -> String {
    let mut out = String::new();
    let mut separator = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
            continue;
        }
        if separator && !out.is_empty() {
            out.push('-');
        }
        separator = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The requirement's project name and its specifiers (`(">=", "1.2")`).
fn parse(requirement: &str) -> (String, Vec<(String, String)>) {
    let end = requirement
        .find(|c: char| "<>=!~[;@ ".contains(c))
        .unwrap_or(requirement.len());
    let name = canonical(&requirement[..end]);
    let rest = requirement[end..].trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(extras) => extras.split_once(']').map_or("", |(_, after)| after),
        None => rest,
    };
    let specs = rest
        .split(';')
        .next()
        .unwrap_or_default()
        .split(',')
        .filter_map(|spec| {
            let spec = spec.trim();
            let op_len = spec
                .find(|c: char| !"<>=!~".contains(c))
                .unwrap_or(spec.len());
            (op_len > 0).then(|| (spec[..op_len].to_owned(), spec[op_len..].trim().to_owned()))
        })
        .collect();
    (name, specs)
}

/// Release numbers compared as numbers, text parts as text (`1.10` after `1.9`).
fn compare(a: &str, b: &str) -> Ordering {
    let parts = |v: &str| -> Vec<String> { v.split(['.', '-', '+']).map(str::to_owned).collect() };
    let (a, b) = (parts(a), parts(b));
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).map_or("0", String::as_str);
        let y = b.get(i).map_or("0", String::as_str);
        let ordering = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => x.cmp(y),
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

fn satisfies(version: &str, op: &str, wanted: &str) -> bool {
    let ordering = compare(version, wanted);
    match op {
        "==" | "===" => match wanted.strip_suffix(".*") {
            Some(prefix) => version == prefix || version.starts_with(&format!("{prefix}.")),
            None => ordering == Ordering::Equal,
        },
        "!=" => ordering != Ordering::Equal,
        ">=" => ordering != Ordering::Less,
        "<=" => ordering != Ordering::Greater,
        ">" => ordering == Ordering::Greater,
        "<" => ordering == Ordering::Less,
        // ~=1.4.2 is >=1.4.2, ==1.4.*
        "~=" => {
            let mut prefix: Vec<&str> = wanted.split('.').collect();
            prefix.pop();
            ordering != Ordering::Less
                && satisfies(version, "==", &format!("{}.*", prefix.join(".")))
        }
        _ => false,
    }
}

/// Whether `requirement` is met by one of `installed` (`name==version` lines).
pub fn is_present(requirement: &str, installed: &[&str]) -> bool {
    let (name, specs) = parse(requirement);
    installed.iter().any(|line| {
        let Some((pkg, version)) = line.split_once("==") else {
            return false;
        };
        canonical(pkg) == name && specs.iter().all(|(op, v)| satisfies(version.trim(), op, v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_are_met_as_pip_meets_them() {
        let installed = ["Probe_Pkg==1.10.0", "other==2.0"];
        assert!(is_present("probe-pkg", &installed));
        assert!(is_present("probe.pkg>=1.9,<2", &installed));
        assert!(is_present("probe_pkg[extra]==1.10.0", &installed));
        assert!(is_present("probe-pkg~=1.9", &installed));
        assert!(!is_present("probe-pkg>1.10", &installed));
        assert!(!is_present("probe-pkg==1.1", &installed));
        assert!(!is_present("missing", &installed));
        assert!(is_present("other==2.*", &installed));
    }
}
