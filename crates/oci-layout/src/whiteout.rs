//! OCI whiteouts: what a layer entry's name says about the layers below it. A file
//! `.wh.<name>` hides `<name>` of the folder it is in; `.wh..wh..opq` hides everything the
//! layers below put in its folder. Every reader that applies layers (onto a folder, onto
//! verify's snapshot) reads names through [`Whiteout::of`].

/// The prefix of a whiteout's name.
const PREFIX: &str = ".wh.";
/// The name of the opaque-folder whiteout.
const OPAQUE: &str = ".wh..wh..opq";

/// What a layer entry's file name means for the layers below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whiteout<'a> {
    /// An ordinary entry.
    None,
    /// Hides what the layers below put in its folder (`.wh..wh..opq`).
    Opaque,
    /// Hides the entry of this name in its folder (`.wh.<name>`).
    Hides(&'a str),
}

impl<'a> Whiteout<'a> {
    /// Reads an entry's file name (its last path component).
    pub fn of(file_name: &'a str) -> Self {
        if file_name == OPAQUE {
            return Self::Opaque;
        }
        match file_name.strip_prefix(PREFIX) {
            Some(hidden) if !hidden.is_empty() => Self::Hides(hidden),
            _ => Self::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_what_they_hide() {
        assert_eq!(Whiteout::of(".wh..wh..opq"), Whiteout::Opaque);
        assert_eq!(Whiteout::of(".wh.motd"), Whiteout::Hides("motd"));
        assert_eq!(Whiteout::of(".wh..hidden"), Whiteout::Hides(".hidden"));
        assert_eq!(Whiteout::of("motd"), Whiteout::None);
        assert_eq!(Whiteout::of(".wh."), Whiteout::None);
        assert_eq!(Whiteout::of("x.wh.y"), Whiteout::None);
    }
}
