//! The layer stages a set of images share, and the order a CI builds them in: first one image
//! through each shared stage (writing the registry cache with `--cache-to`), then the others,
//! which take the shared layers from it (`--cache-from`) instead of each building them again.

use std::collections::{BTreeMap, BTreeSet};

use image::build::Stage;
use serde_json::{json, Value};

/// Layers that several images build the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStage {
    /// The images that share them.
    pub images: Vec<String>,
    /// `base` and the roles, bottom first: the longest run of layers all of them share.
    pub layers: Vec<String>,
}

/// The images in the order to build them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FanOut {
    /// What is shared, most images first.
    pub shared: Vec<SharedStage>,
    /// One image through each shared stage: built first, with `--cache-to`.
    pub first: Vec<String>,
    /// The rest: built once `first` is, with `--cache-from`.
    pub then: Vec<String>,
}

/// The fan-out of `images` (each with its stages; an image with none, one that does not
/// plan, shares nothing).
pub fn fan_out(images: &BTreeMap<String, Vec<Stage>>) -> FanOut {
    // The images through each stage, by depth and key: the keys chain, so the images through a
    // stage share every stage below it too.
    let mut through: BTreeMap<(usize, &str), BTreeSet<&str>> = BTreeMap::new();
    for (image, stages) in images {
        for (depth, stage) in stages.iter().enumerate() {
            through
                .entry((depth, stage.key.as_str()))
                .or_default()
                .insert(image.as_str());
        }
    }
    let shared_at: Vec<(usize, &BTreeSet<&str>)> = through
        .iter()
        .filter(|(_, set)| set.len() > 1)
        .map(|((depth, _), set)| (*depth, set))
        .collect();
    // One group per set of images, with the deepest stage that set shares.
    let mut groups: BTreeMap<Vec<&str>, usize> = BTreeMap::new();
    for (depth, set) in &shared_at {
        let deepest = groups.entry(set.iter().copied().collect()).or_default();
        *deepest = (*deepest).max(*depth);
    }
    let mut shared: Vec<SharedStage> = groups
        .iter()
        .map(|(set, depth)| SharedStage {
            images: set.iter().map(|s| s.to_string()).collect(),
            layers: images[set[0]][..=*depth]
                .iter()
                .map(|s| s.role.clone())
                .collect(),
        })
        .collect();
    shared.sort_by(|a, b| {
        (b.images.len(), a.layers.len(), &a.images).cmp(&(
            a.images.len(),
            b.layers.len(),
            &b.images,
        ))
    });
    // A set no smaller set lies inside shares its deepest stage with no fewer images: one image
    // of each such set goes first, and so passes through every shared stage above it.
    let first: BTreeSet<String> = groups
        .keys()
        .filter(|set| {
            !groups
                .keys()
                .any(|other| other.len() < set.len() && other.iter().all(|i| set.contains(i)))
        })
        .map(|set| set[0].to_string())
        .collect();
    let then = images
        .keys()
        .filter(|image| !first.contains(*image))
        .cloned()
        .collect();
    FanOut {
        shared,
        first: first.into_iter().collect(),
        then,
    }
}

impl FanOut {
    /// As `affected --json` prints it, beside the matrix of every affected image.
    pub fn to_json(&self) -> Value {
        let matrix = |images: &[String]| {
            let include: Vec<Value> = images.iter().map(|i| json!({ "image": i })).collect();
            json!({ "include": include })
        };
        let shared: Vec<Value> = self
            .shared
            .iter()
            .map(|s| json!({ "images": s.images, "layers": s.layers }))
            .collect();
        json!({
            "shared": shared,
            "first": matrix(&self.first),
            "then": matrix(&self.then),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An image's stages: `base` and roles, each keyed by its own key and those below.
    fn stages(layers: &[(&str, &str)]) -> Vec<Stage> {
        let mut key = String::new();
        layers
            .iter()
            .map(|(role, own)| {
                key = format!("{key}/{own}");
                Stage {
                    role: (*role).into(),
                    key: key.clone(),
                }
            })
            .collect()
    }

    fn images(list: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, Vec<Stage>> {
        list.iter()
            .map(|(name, layers)| ((*name).to_string(), stages(layers)))
            .collect()
    }

    #[test]
    fn one_image_through_each_shared_stage_goes_first() {
        let fan = fan_out(&images(&[
            ("a", &[("base", "r8"), ("common", "c"), ("mofed", "m1")]),
            (
                "b",
                &[("base", "r8"), ("common", "c"), ("mofed", "m1"), ("x", "x")],
            ),
            ("c", &[("base", "r8"), ("common", "c"), ("mofed", "m2")]),
            ("d", &[("base", "u22"), ("common", "c")]),
        ]));
        assert_eq!(
            fan.shared,
            vec![
                SharedStage {
                    images: vec!["a".into(), "b".into(), "c".into()],
                    layers: vec!["base".into(), "common".into()],
                },
                SharedStage {
                    images: vec!["a".into(), "b".into()],
                    layers: vec!["base".into(), "common".into(), "mofed".into()],
                },
            ]
        );
        // a goes through both shared stages; c, b and d take theirs from it (d shares nothing).
        assert_eq!(fan.first, ["a"]);
        assert_eq!(fan.then, ["b", "c", "d"]);
    }

    #[test]
    fn separate_groups_each_send_one_image_first() {
        let fan = fan_out(&images(&[
            ("el-a", &[("base", "r9"), ("k", "1")]),
            ("el-b", &[("base", "r9"), ("k", "2")]),
            ("deb-a", &[("base", "d12"), ("k", "1")]),
            ("deb-b", &[("base", "d12"), ("k", "1")]),
            ("alone", &[("base", "u24")]),
            ("broken", &[]),
        ]));
        assert_eq!(fan.first, ["deb-a", "el-a"]);
        assert_eq!(fan.then, ["alone", "broken", "deb-b", "el-b"]);
        assert_eq!(fan.shared.len(), 2);
    }

    #[test]
    fn images_that_share_nothing_all_build_at_once() {
        let fan = fan_out(&images(&[("a", &[("base", "1")]), ("b", &[("base", "2")])]));
        assert!(fan.shared.is_empty() && fan.first.is_empty());
        assert_eq!(fan.then, ["a", "b"]);
        assert_eq!(fan.to_json()["first"]["include"], json!([]));
    }
}
