//! `--json`: one JSON object per line on standard output, naming its image when it has one.

use std::io::Write;

use engine::events::Event;

use super::{Display, Origin};

/// One JSON object per event on standard output.
#[derive(Debug, Default)]
pub struct JsonDisplay;

impl Display for JsonDisplay {
    fn show(&self, origin: &Origin, event: &Event) {
        if let Event::Download { bytes, total, .. } = event {
            // Only the finished download, not every tick.
            if *total != Some(*bytes) {
                return;
            }
        }
        let Ok(mut value) = serde_json::to_value(event) else {
            return;
        };
        if let (Some(image), Some(map)) = (&origin.image, value.as_object_mut()) {
            map.insert("image".into(), image.as_str().into());
        }
        let _ = writeln!(std::io::stdout().lock(), "{value}");
    }
}
