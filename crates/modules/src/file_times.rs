//! `file`'s `modification_time` and `access_time`, as Ansible sets them: `preserve`, `now`,
//! or a local time of the image read with a `strptime` format (`%Y%m%d%H%M.%S` by default).

use std::path::Path;

use crate::types::Text;

use super::api::ModuleError;
use super::file_diff::FileDiff;
use super::pathinfo::float_time;
use crate::rootfs::RootFs;

/// What a time should become.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// As it is.
    Preserve,
    /// The time of the run.
    Now,
    /// Seconds since the epoch.
    At(f64),
}

/// The time `value` asks for (`None`: the state's default, `now` for touch, else preserve).
pub fn when(
    fs: &RootFs,
    value: &Option<Text>,
    format: &Option<Text>,
    touch: bool,
) -> Result<When, ModuleError> {
    let text = match value.as_ref().map(Text::as_str) {
        None if touch => return Ok(When::Now),
        None | Some("preserve") => return Ok(When::Preserve),
        Some("now") => return Ok(When::Now),
        Some(text) => text,
    };
    let format = format.as_ref().map_or("%Y%m%d%H%M.%S", Text::as_str);
    let fail = |why: String| {
        ModuleError::new(format!(
            "Error while obtaining timestamp for time {text} using format {format}: {why}"
        ))
    };
    let local = strptime(text, format).map_err(fail)?;
    let offset = super::tzif::offset_of_local(fs, local)?;
    Ok(When::At((local - offset) as f64))
}

/// Sets the times of `path` where they differ from what is asked; notes them in `diff`.
pub fn update(
    fs: &RootFs,
    path: &Path,
    mtime: When,
    atime: When,
    check: bool,
    diff: &mut FileDiff,
) -> Result<bool, ModuleError> {
    if mtime == When::Preserve && atime == When::Preserve {
        return Ok(false);
    }
    let Some(meta) = fs.meta_follow(path)? else {
        return Ok(false);
    };
    let before_m = float_time(meta.mtime, meta.nsecs[0]);
    let before_a = float_time(meta.atime, meta.nsecs[1]);
    let now = now_float();
    let pick = |w: When, before: f64| match w {
        When::Preserve => before,
        When::Now => now,
        When::At(t) => t,
    };
    let (new_m, new_a) = (pick(mtime, before_m), pick(atime, before_a));
    let both_now = mtime == When::Now && atime == When::Now;
    if !both_now && new_m == before_m && new_a == before_a {
        return Ok(false);
    }
    if !check {
        let target = fs.resolve(path)?;
        if both_now {
            fs.set_times_now(&target)?;
        } else {
            fs.set_times_exact(&target, split(new_a), split(new_m))?;
        }
    }
    if new_m != before_m {
        diff.note("mtime", before_m, new_m);
    }
    if new_a != before_a {
        diff.note("atime", before_a, new_a);
    }
    Ok(true)
}

fn now_float() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Seconds and nanoseconds of a float time.
fn split(t: f64) -> (i64, i64) {
    let secs = t.floor();
    (
        secs as i64,
        ((t - secs) * 1e9).round().min(999_999_999.0) as i64,
    )
}

/// Seconds since the epoch of a local date and time read as Python's `time.strptime` reads
/// it (`%Y %y %m %d %H %M %S %%` and literal text; unset fields as 1900-01-01 00:00:00).
pub fn strptime(text: &str, format: &str) -> Result<i64, String> {
    let mut fields = [1900_i64, 1, 1, 0, 0, 0];
    let mut rest = text;
    let mut spec = format.chars();
    while let Some(c) = spec.next() {
        if c != '%' {
            rest = rest
                .strip_prefix(c)
                .ok_or_else(|| format!("time data '{text}' does not match format '{format}'"))?;
            continue;
        }
        let directive = spec.next().unwrap_or('%');
        let (slot, width) = match directive {
            '%' => {
                rest = rest.strip_prefix('%').ok_or("unmatched %")?;
                continue;
            }
            'Y' => (0, 4),
            'y' => (0, 2),
            'm' => (1, 2),
            'd' => (2, 2),
            'H' => (3, 2),
            'M' => (4, 2),
            'S' => (5, 2),
            other => return Err(format!("the directive %{other} is not supported")),
        };
        let digits = rest
            .chars()
            .take(width)
            .take_while(char::is_ascii_digit)
            .count();
        let value: i64 = rest[..digits]
            .parse()
            .map_err(|_| format!("time data '{text}' does not match format '{format}'"))?;
        rest = &rest[digits..];
        fields[slot] = match directive {
            'y' if value < 69 => 2000 + value,
            'y' => 1900 + value,
            _ => value,
        };
    }
    if !rest.is_empty() {
        return Err(format!("unconverted data remains: {rest}"));
    }
    let [year, month, day, hour, minute, second] = fields;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return Err(format!(
            "time data '{text}' does not match format '{format}'"
        ));
    }
    Ok(
        ansible::template::days_from_civil(year, month, day) * 86_400
            + hour * 3600
            + minute * 60
            + second,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansible_default_format_reads_local_seconds() {
        assert_eq!(
            strptime("202202081414.00", "%Y%m%d%H%M.%S"),
            Ok(1_644_329_640)
        );
        assert_eq!(strptime("19700101", "%Y%m%d"), Ok(0));
        assert!(strptime("2022-02-08", "%Y%m%d").is_err());
        assert!(strptime("202202081414.00x", "%Y%m%d%H%M.%S").is_err());
    }

    #[test]
    fn float_times_split_into_nanoseconds() {
        assert_eq!(split(1.5), (1, 500_000_000));
        assert_eq!(split(1_644_329_640.0), (1_644_329_640, 0));
    }
}
