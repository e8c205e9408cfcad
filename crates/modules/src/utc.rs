//! A Unix time as a UTC calendar date and time, for timestamps written into images and names
//! (OCI `created`, Ansible-style backup names). No time zone database: UTC only.

/// A UTC date and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    /// Year.
    pub year: i64,
    /// Month, 1 to 12.
    pub month: i64,
    /// Day of the month, 1 to 31.
    pub day: i64,
    /// Hour, 0 to 23.
    pub hour: u64,
    /// Minute, 0 to 59.
    pub minute: u64,
    /// Second, 0 to 59.
    pub second: u64,
}

impl Utc {
    /// The date and time of `epoch` seconds since 1970-01-01 (Howard Hinnant's days-to-civil).
    pub fn from_epoch(epoch: u64) -> Self {
        let (days, secs) = ((epoch / 86_400) as i64, epoch % 86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Self {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day: doy - (153 * mp + 2) / 5 + 1,
            hour: secs / 3600,
            minute: secs % 3600 / 60,
            second: secs % 60,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Utc;

    #[test]
    fn calendar_dates() {
        let at = |e| {
            let u = Utc::from_epoch(e);
            (u.year, u.month, u.day, u.hour, u.minute, u.second)
        };
        assert_eq!(at(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(at(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(at(1_795_000_000), (2026, 11, 18, 11, 6, 40));
    }
}
