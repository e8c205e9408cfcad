//! The `now(utc=False, fmt=None)` global of Ansible's templar: the time on the machine running
//! the build, local (its `TZ`, else `/etc/localtime`) or UTC, as a datetime (`now().year`,
//! `now().strftime('%Y')`, printed as Python prints one) or, with `fmt`, as `strftime` text.

use std::sync::Arc;

use minijinja::value::{from_args, DynObject, Kwargs, Object, Value};
use minijinja::{Error, ErrorKind, State};

/// A name no variable can have, known only while building: `now()` reads it so the plan leaves
/// a template that calls it to the build.
pub const BUILD_TIME: &str = "__imgbuild_build_time";

/// A moment as a civil date and time.
#[derive(Debug, Clone, Copy)]
pub(super) struct DateTime {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micro: u32,
    /// Days since Monday, as Python's `weekday()`.
    weekday: u32,
    yday: u32,
    /// Seconds since the Unix epoch, as `%s` prints them.
    epoch: i64,
}

/// Howard Hinnant's `civil_from_days`: the year, month and day of a day since 1970-01-01.
pub fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Days since 1970-01-01 of a date (Howard Hinnant's `days_from_civil`); the engine reads
/// file times with it too.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

impl DateTime {
    pub(super) fn from_unix(secs: i64, micro: u32) -> Self {
        let days = secs.div_euclid(86_400);
        let rest = secs.rem_euclid(86_400);
        let (year, month, day) = civil(days);
        let jan1 = days_from_civil(year, 1, 1);
        DateTime {
            year,
            month,
            day,
            hour: (rest / 3600) as u32,
            minute: (rest % 3600 / 60) as u32,
            second: (rest % 60) as u32,
            micro,
            weekday: (days + 3).rem_euclid(7) as u32,
            yday: (days - jan1 + 1) as u32,
            epoch: secs,
        }
    }

    /// The civil fields, most significant first.
    fn fields(&self) -> (i64, u32, u32, u32, u32, u32, u32) {
        let d = self;
        (d.year, d.month, d.day, d.hour, d.minute, d.second, d.micro)
    }

    /// Python's `strftime` for the common directives.
    fn strftime(&self, fmt: &str) -> Result<String, Error> {
        const DAYS: [&str; 7] = [
            "Monday",
            "Tuesday",
            "Wednesday",
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
        ];
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let mut out = String::new();
        let mut chars = fmt.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let month = MONTHS[(self.month as usize + 11) % 12];
            let day = DAYS[self.weekday as usize % 7];
            match chars.next() {
                Some('Y') => out.push_str(&self.year.to_string()),
                Some('y') => out.push_str(&format!("{:02}", self.year.rem_euclid(100))),
                Some('m') => out.push_str(&format!("{:02}", self.month)),
                Some('d') => out.push_str(&format!("{:02}", self.day)),
                Some('H') => out.push_str(&format!("{:02}", self.hour)),
                Some('I') => out.push_str(&format!("{:02}", (self.hour + 11) % 12 + 1)),
                Some('p') => out.push_str(if self.hour < 12 { "AM" } else { "PM" }),
                Some('M') => out.push_str(&format!("{:02}", self.minute)),
                Some('S') => out.push_str(&format!("{:02}", self.second)),
                Some('f') => out.push_str(&format!("{:06}", self.micro)),
                Some('s') => out.push_str(&self.epoch.to_string()),
                Some('j') => out.push_str(&format!("{:03}", self.yday)),
                Some('a') => out.push_str(&day[..3]),
                Some('A') => out.push_str(day),
                Some('b') => out.push_str(&month[..3]),
                Some('B') => out.push_str(month),
                Some('w') => out.push_str(&((self.weekday + 1) % 7).to_string()),
                Some('F') => out.push_str(&format!("{}-{:02}-{:02}", self.year, self.month, self.day)),
                Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second)),
                Some('%') => out.push('%'),
                other => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        format!(
                            "now(): imgbuild's strftime knows %Y %y %m %d %H %I %p %M %S %f %s %j %a %A %b %B %w %F %T, not %{}",
                            other.map(String::from).unwrap_or_default()
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }
}

impl std::fmt::Display for DateTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )?;
        if self.micro > 0 {
            write!(f, ".{:06}", self.micro)?;
        }
        Ok(())
    }
}

impl Object for DateTime {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        Some(match key.as_str()? {
            "year" => Value::from(self.year),
            "month" => Value::from(self.month),
            "day" => Value::from(self.day),
            "hour" => Value::from(self.hour),
            "minute" => Value::from(self.minute),
            "second" => Value::from(self.second),
            "microsecond" => Value::from(self.micro),
            _ => return None,
        })
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "strftime" => {
                let (fmt,): (String,) = from_args(args)?;
                Ok(Value::from(self.strftime(&fmt)?))
            }
            "weekday" => Ok(Value::from(self.weekday)),
            "isoformat" => Ok(Value::from(self.to_string().replacen(' ', "T", 1))),
            _ => Err(Error::new(
                ErrorKind::UnknownMethod,
                format!("datetime has no method {method}"),
            )),
        }
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.as_ref(), f)
    }

    /// Two datetimes compare by their fields, as Python compares naive datetimes.
    fn custom_cmp(self: &Arc<Self>, other: &DynObject) -> Option<std::cmp::Ordering> {
        let other = other.downcast_ref::<DateTime>()?;
        Some(self.fields().cmp(&other.fields()))
    }
}

/// The local zone's offset from UTC at `secs`, from its TZif file (the transitions it lists).
fn local_offset(secs: i64) -> i64 {
    let path = match std::env::var("TZ") {
        Ok(tz) if !tz.is_empty() => {
            let name = tz.trim_start_matches(':');
            if name.starts_with('/') {
                name.to_owned()
            } else {
                format!("/usr/share/zoneinfo/{name}")
            }
        }
        _ => "/etc/localtime".to_owned(),
    };
    std::fs::read(path)
        .ok()
        .and_then(|data| tzif_offset(&data, secs))
        .unwrap_or(0)
}

fn tzif_offset(data: &[u8], secs: i64) -> Option<i64> {
    let be32 = |at: usize| -> Option<i64> {
        Some(i64::from(i32::from_be_bytes(
            data.get(at..at + 4)?.try_into().ok()?,
        )))
    };
    let count =
        |base: usize, i: usize| -> Option<usize> { usize::try_from(be32(base + 20 + 4 * i)?).ok() };
    if data.get(..4)? != b"TZif" {
        return None;
    }
    // Skip the version 1 block to the 64-bit one where there is one.
    let (mut base, mut width) = (0usize, 4usize);
    if data.get(4).is_some_and(|v| *v >= b'2') {
        let (isut, isstd, leap, time, typ, chars) = (
            count(0, 0)?,
            count(0, 1)?,
            count(0, 2)?,
            count(0, 3)?,
            count(0, 4)?,
            count(0, 5)?,
        );
        base = 44 + time * 5 + typ * 6 + chars + leap * 8 + isstd + isut;
        width = 8;
    }
    let (time, typ) = (count(base, 3)?, count(base, 4)?);
    let times = base + 44;
    let indices = times + time * width;
    let types = indices + time;
    let at = |i: usize| -> Option<i64> {
        let start = times + i * width;
        let bytes = data.get(start..start + width)?;
        Some(if width == 8 {
            i64::from_be_bytes(bytes.try_into().ok()?)
        } else {
            i64::from(i32::from_be_bytes(bytes.try_into().ok()?))
        })
    };
    let mut index = 0usize;
    for i in 0..time {
        if at(i)? <= secs {
            index = usize::from(*data.get(indices + i)?);
        }
    }
    if index >= typ {
        return None;
    }
    be32(types + index * 6)
}

/// A moment (seconds and microseconds since the epoch) in the local time of the machine
/// running the build, as Python prints a `datetime`.
pub(super) fn local_datetime_text(secs: i64, micro: u32) -> String {
    DateTime::from_unix(secs + local_offset(secs), micro).to_string()
}

/// `now(utc=False, fmt=None)`.
pub fn now(
    state: &State,
    utc: Option<bool>,
    fmt: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    // Ansible reads the clock when the task runs: where the plan names this variable as
    // known only then, the render is left to the build.
    let _ = state.lookup(BUILD_TIME);
    let utc = kwargs.get::<Option<bool>>("utc")?.or(utc);
    let fmt = kwargs.get::<Option<String>>("fmt")?.or(fmt);
    kwargs.assert_all_used()?;
    let elapsed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX);
    let offset = if utc.unwrap_or(false) {
        0
    } else {
        local_offset(secs)
    };
    let mut moment = DateTime::from_unix(secs + offset, elapsed.subsec_micros());
    moment.epoch = secs;
    match fmt {
        Some(fmt) => Ok(Value::from(moment.strftime(&fmt)?)),
        None => Ok(Value::from_object(moment)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_and_strftime_as_python() {
        // python3 -c 'import datetime; print(datetime.datetime.utcfromtimestamp(1709251199).strftime("%Y-%m-%d %H:%M:%S %a %j"))'
        let moment = DateTime::from_unix(1_709_251_199, 0);
        assert_eq!(
            moment.strftime("%Y-%m-%d %H:%M:%S %a %j").ok().as_deref(),
            Some("2024-02-29 23:59:59 Thu 060")
        );
        assert_eq!(moment.to_string(), "2024-02-29 23:59:59");
        assert!(moment.strftime("%Q").is_err());
        assert_eq!(
            moment.strftime("%s.%f").ok().as_deref(),
            Some("1709251199.000000")
        );
        let mut env = minijinja::Environment::new();
        env.add_function("now", now);
        let year = env.render_str("{{ now(true, '%Y') }}", ()).expect("now");
        assert_eq!(year.len(), 4, "{year}");
        let epoch = env
            .render_str("{{ now(fmt='%s', utc=True) }}", ())
            .expect("now");
        assert!(
            epoch.len() >= 10 && epoch.chars().all(|c| c.is_ascii_digit()),
            "{epoch}"
        );
    }
}
