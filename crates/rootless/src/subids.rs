//! `/etc/subuid` and `/etc/subgid`: `user:first:count` lines, the user by name or by id.

use crate::error::RootlessError;

/// A range of subordinate ids on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    /// The first host id.
    pub first: u32,
    /// How many.
    pub count: u32,
}

/// The lines of one subordinate id file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubIds {
    entries: Vec<(String, IdRange)>,
}

impl SubIds {
    /// Reads `file`; a missing file gives no ranges.
    pub fn read(file: &'static str) -> Result<Self, RootlessError> {
        match std::fs::read_to_string(file) {
            Ok(text) => Ok(Self::parse(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(RootlessError::Read { file, source }),
        }
    }

    /// The ranges in `text`; lines that are not `user:first:count` are skipped, as shadow's
    /// own reader skips them.
    pub fn parse(text: &str) -> Self {
        let entries = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|line| {
                let mut fields = line.split(':');
                let owner = fields.next()?;
                let first = fields.next()?.parse().ok()?;
                let count = fields.next()?.parse().ok()?;
                (fields.next().is_none() && count > 0)
                    .then(|| (owner.to_owned(), IdRange { first, count }))
            })
            .collect();
        Self { entries }
    }

    /// The ranges of the user named `name` or numbered `uid`, in the file's order.
    pub fn ranges_of(&self, name: Option<&str>, uid: u32) -> Vec<IdRange> {
        let id = uid.to_string();
        self.entries
            .iter()
            .filter(|(owner, _)| Some(owner.as_str()) == name || *owner == id)
            .map(|(_, range)| *range)
            .collect()
    }
}

/// The name of user `uid` in `/etc/passwd`, where it is there.
pub fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse::<u32>().ok()? == uid).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_by_name_or_id_in_file_order() {
        let ids = SubIds::parse(
            "# comment\nalice:100000:65536\nbob:165536:65536\n1000:300000:10\n\
             broken line\nalice:400000:5\nzero:1:0\n",
        );
        assert_eq!(
            ids.ranges_of(Some("alice"), 1000),
            vec![
                IdRange {
                    first: 100000,
                    count: 65536
                },
                IdRange {
                    first: 300000,
                    count: 10
                },
                IdRange {
                    first: 400000,
                    count: 5
                },
            ]
        );
        assert_eq!(ids.ranges_of(Some("carol"), 1001), Vec::new());
        assert_eq!(
            ids.ranges_of(Some("zero"), 7),
            Vec::new(),
            "empty ranges skipped"
        );
    }
}
