//! NVIDIA's two kinds of kernel modules and how an image's modules tell them apart: the
//! proprietary `nvidia.ko` carries NVIDIA's own licence, the open one `Dual MIT/GPL`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which NVIDIA kernel modules an image carries (the recipe's `nvidia_kernel_flavor`, the
/// `io.imgbuild.nvidia-flavor` label, `verify --nvidia-flavor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NvidiaFlavor {
    /// NVIDIA's open kernel modules (`Dual MIT/GPL`), which Grace Hopper and Blackwell GPUs
    /// need.
    Open,
    /// The proprietary modules (licence `NVIDIA`).
    Proprietary,
}

impl NvidiaFlavor {
    /// The flavour as recipes, labels and the command line name it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "open" => Some(Self::Open),
            "proprietary" => Some(Self::Proprietary),
            _ => None,
        }
    }

    /// Its name (`open`, `proprietary`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Proprietary => "proprietary",
        }
    }

    /// The flavour of an `nvidia` module with this `.modinfo` licence, when it is one of
    /// NVIDIA's.
    pub fn of_license(license: &str) -> Option<Self> {
        match license {
            "NVIDIA" => Some(Self::Proprietary),
            "Dual MIT/GPL" => Some(Self::Open),
            _ => None,
        }
    }
}

impl fmt::Display for NvidiaFlavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::NvidiaFlavor;

    #[test]
    fn names_and_licences_map_both_ways() {
        for flavor in [NvidiaFlavor::Open, NvidiaFlavor::Proprietary] {
            assert_eq!(NvidiaFlavor::parse(flavor.as_str()), Some(flavor));
        }
        assert_eq!(
            NvidiaFlavor::of_license("NVIDIA"),
            Some(NvidiaFlavor::Proprietary)
        );
        assert_eq!(
            NvidiaFlavor::of_license("Dual MIT/GPL"),
            Some(NvidiaFlavor::Open)
        );
        assert_eq!(NvidiaFlavor::of_license("GPL"), None);
        assert_eq!(NvidiaFlavor::parse("closed"), None);
    }

    #[test]
    fn plans_write_the_name_recipes_use() {
        let written = serde_json::to_string(&NvidiaFlavor::Proprietary).expect("json");
        assert_eq!(written, "\"proprietary\"");
        let read: NvidiaFlavor = serde_json::from_str("\"open\"").expect("read");
        assert_eq!(read, NvidiaFlavor::Open);
    }
}
