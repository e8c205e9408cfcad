//! The words and lines every human-readable display shares: a task's end, a layer, a bar.

use engine::events::{Event, Status};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

fn status_word(status: Status, ignored: bool) -> &'static str {
    match (status, ignored) {
        (Status::Failed, true) => "failed (ignored)",
        (Status::Ok, _) => "ok",
        (Status::Changed, _) => "changed",
        (Status::Skipped, _) => "skipped",
        (Status::Failed, false) => "FAILED",
    }
}

/// `12.3 MB`.
pub fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// A text progress bar: `[#####.....] 50% 12.0 MB/24.0 MB`.
pub fn bar(bytes: u64, total: Option<u64>) -> String {
    match total.filter(|t| *t > 0) {
        Some(total) => {
            let done = bytes.min(total);
            let filled = ((done * 20) / total) as usize;
            format!(
                "[{}{}] {:>3}% {}/{}",
                "#".repeat(filled),
                ".".repeat(20 - filled),
                done * 100 / total,
                megabytes(bytes),
                megabytes(total)
            )
        }
        None => megabytes(bytes),
    }
}

/// `== role: layer 0123456789ab (12.3 MB) from cache`.
pub fn layer_line(
    role: &str,
    digest: &str,
    size: u64,
    cached: bool,
    why: &[String],
    registry: &Option<String>,
) -> String {
    let short = digest
        .trim_start_matches("sha256:")
        .get(..12)
        .unwrap_or(digest);
    let how = if let Some(registry) = registry {
        format!("from the registry cache {registry}")
    } else if cached {
        "from cache".to_owned()
    } else if why.is_empty() {
        "built".to_owned()
    } else {
        format!("rebuilt: {}", why.join("; "))
    };
    format!("== {role}: layer {short} ({}) {how}", megabytes(size))
}

/// `[role] task: changed (1.2s) - its message's first line`.
pub fn end_line(
    role: &str,
    task: &str,
    status: Status,
    seconds: f64,
    msg: &Option<String>,
    ignored: bool,
) -> String {
    let mut line = format!(
        "[{role}] {task}: {} ({seconds:.1}s)",
        status_word(status, ignored)
    );
    if let Some(msg) = msg
        .as_ref()
        .filter(|m| !m.is_empty() && status != Status::Failed)
    {
        let first = msg.lines().next().unwrap_or_default();
        line.push_str(&format!(" - {first}"));
    }
    line
}

/// The lasting line of an event every human display prints the same way (a role's start and
/// end, a task's end, a layer, a note, a diff); `None` for the others. `position`: the role's
/// place among the recipe's, `(i, n)`.
pub fn event_line(position: Option<(usize, usize)>, event: &Event) -> Option<String> {
    Some(match event {
        Event::RoleStart { role } => match position {
            Some((i, n)) => format!("== {role} (role {i} of {n})"),
            None => format!("== {role}"),
        },
        Event::Note { message } => format!("note: {message}"),
        Event::Layer {
            role,
            digest,
            size,
            cached,
            why,
            registry,
        } => layer_line(role, digest, *size, *cached, why, registry),
        Event::TaskEnd {
            role,
            task,
            status,
            seconds,
            msg,
            ignored,
            ..
        } => end_line(role, task, *status, *seconds, msg, *ignored),
        Event::Diff { diff } => diff.trim_end_matches('\n').to_owned(),
        Event::RoleEnd {
            role,
            tasks,
            changed,
            seconds,
        } => format!("== {role}: {tasks} tasks, {changed} changed, {seconds:.1}s"),
        Event::TaskStart { .. } | Event::Step { .. } | Event::Download { .. } => return None,
    })
}

/// A line of a command's output as `-v` prints it: `  | line`.
pub fn output_line(line: &str) -> String {
    format!("  | {line}")
}

/// `text` cut to `width` terminal columns (display widths: a CJK character or an emoji takes
/// two), an ellipsis marking the cut.
pub fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let room = width.saturating_sub(1);
    let mut used = 0;
    let mut kept = String::new();
    for c in text.chars() {
        used += c.width().unwrap_or(0);
        if used > room {
            break;
        }
        kept.push(c);
    }
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar() {
        assert_eq!(
            bar(50, Some(100)),
            "[##########..........]  50% 0.0 MB/0.0 MB"
        );
        assert_eq!(bar(2_000_000, None), "2.0 MB");
        assert!(bar(200, Some(100)).contains("100%"));
    }

    #[test]
    fn a_long_line_is_cut_to_the_width_and_says_so() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("nvidia › the driver", 10), "nvidia › …");
        assert_eq!(fit("nvidia › the driver", 10).chars().count(), 10);
        // Wide characters take two columns each: four of them and the ellipsis fill 9.
        assert_eq!(fit("日本語テキスト", 10), "日本語テ…");
        assert_eq!(fit("日本語テキスト", 10).width(), 9);
        assert_eq!(fit("日本語", 6), "日本語");
        assert_eq!(fit("a\u{301}bcdef", 4), "a\u{301}bc…");
    }

    #[test]
    fn a_task_line_names_its_role_status_and_message() {
        let line = end_line(
            "nvidia",
            "the driver",
            Status::Changed,
            1.25,
            &Some("one\ntwo".into()),
            false,
        );
        assert_eq!(line, "[nvidia] the driver: changed (1.2s) - one");
        let failed = end_line("r", "t", Status::Failed, 0.0, &Some("why".into()), true);
        assert_eq!(failed, "[r] t: failed (ignored) (0.0s)");
    }
}
