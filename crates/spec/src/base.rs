//! The kinds of base an image starts from: the recipe's `bootstrap`, read once at plan time.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where an image's bottom layers come from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseKind {
    /// An image pulled from a registry (`build_from` is its reference); the default.
    #[default]
    Docker,
    /// An OCI layout folder of the project.
    Oci,
    /// A docker-archive of the project.
    Archive,
    /// A Debian or Ubuntu suite made with debootstrap.
    Debootstrap,
    /// An EL root installed by dnf from the recipe's repositories (`dnf_repos`).
    Dnf,
}

/// A `bootstrap` that names no kind of base.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bootstrap '{0}' is not one of: docker, oci, archive, debootstrap, dnf")]
pub struct UnknownBase(pub String);

impl BaseKind {
    /// Every kind, in the order messages list them.
    pub const ALL: [Self; 5] = [
        Self::Docker,
        Self::Oci,
        Self::Archive,
        Self::Debootstrap,
        Self::Dnf,
    ];

    /// The kind a recipe's `bootstrap` names.
    pub fn parse(word: &str) -> Result<Self, UnknownBase> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == word)
            .ok_or_else(|| UnknownBase(word.to_owned()))
    }

    /// The word recipes use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Oci => "oci",
            Self::Archive => "archive",
            Self::Debootstrap => "debootstrap",
            Self::Dnf => "dnf",
        }
    }

    /// Whether `build_from` names an image (a reference, or a file holding one), whose name
    /// may tell its distribution.
    pub fn is_an_image(self) -> bool {
        matches!(self, Self::Docker | Self::Oci | Self::Archive)
    }
}

impl fmt::Display for BaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_word_and_others_are_named_in_the_refusal() {
        for kind in BaseKind::ALL {
            assert_eq!(BaseKind::parse(kind.as_str()), Ok(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
        let refused = BaseKind::parse("zypper").expect_err("no such base");
        assert_eq!(
            refused.to_string(),
            "bootstrap 'zypper' is not one of: docker, oci, archive, debootstrap, dnf"
        );
        assert!(BaseKind::Archive.is_an_image() && !BaseKind::Dnf.is_an_image());
        assert_eq!(BaseKind::default(), BaseKind::Docker);
    }
}
