//! Options and readers several commands share: variables and tags, Secure Boot, sizes.

use std::path::PathBuf;

use clap::Args;

/// Variables and tag selection shared by commands that plan.
#[derive(Debug, Args, Clone, Default)]
pub struct VarArgs {
    /// Set a variable, highest precedence: KEY=VALUE, a JSON/YAML mapping, or @FILE.
    #[arg(short = 'e', long = "extra-vars", value_name = "K=V")]
    pub extra_vars: Vec<String>,
    /// Only tasks with these tags (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Leave out tasks with these tags (comma-separated).
    #[arg(long = "skip-tags", value_delimiter = ',')]
    pub skip_tags: Vec<String>,
    /// The site mirror URL, over mirror.toml and the recipe.
    #[arg(long, value_name = "URL")]
    pub mirror: Option<String>,
    /// Skip the recipe lints (for example nvidia before mofed).
    #[arg(long)]
    pub no_lint: bool,
    /// A vault password file, for vaulted values and files (run if it is executable; its
    /// output is the password). Repeatable.
    #[arg(
        long = "vault-password-file",
        alias = "vault-pass-file",
        value_name = "FILE"
    )]
    pub vault_password_files: Vec<PathBuf>,
    /// A vault password file for one vault id: [LABEL@]FILE. Repeatable; no prompt.
    #[arg(long = "vault-id", value_name = "[LABEL@]FILE")]
    pub vault_ids: Vec<String>,
}

/// Booting under Secure Boot (`boot`, `build --boot`).
#[derive(Debug, Args, Clone, Default)]
pub struct SecureBootArgs {
    /// Boot as a Warewulf 4.5+ node with Secure Boot boots.
    ///
    /// Debian's Secure Boot OVMF (Microsoft's keys), shim, Debian's signed GRUB, the image's own
    /// signed kernel, which then enforces module signatures; the modules' signer (the image's
    /// label) is enrolled as a MOK. Needs ovmf, shim-signed, grub-efi-amd64-signed, mtools and
    /// dosfstools.
    #[arg(long)]
    pub secure_boot: bool,
    /// With --secure-boot: the certificate (PEM or DER) to enrol as the MOK, instead of the
    /// image's module-signer label's.
    #[arg(
        long,
        value_name = "FILE",
        requires = "secure_boot",
        conflicts_with = "no_mok"
    )]
    pub mok_cert: Option<PathBuf>,
    /// With --secure-boot: enrol no MOK (modules signed with the site's key are then refused).
    #[arg(long, requires = "secure_boot")]
    pub no_mok: bool,
}

impl SecureBootArgs {
    /// The boot crate's request, when Secure Boot is asked for.
    pub fn request(&self) -> Option<boot::SecureBootRequest> {
        self.secure_boot.then(|| boot::SecureBootRequest {
            mok_cert: self.mok_cert.clone(),
            no_mok: self.no_mok,
        })
    }
}

/// Reads a size: bytes, or a number with K, M, G or T (powers of 1024; `G`, `GB`, `GiB` alike).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let number: u64 = number.parse().map_err(|_| {
        format!(
            "'{text}' is not a size: write bytes or a number with K, M, G or T (for example 20G)"
        )
    })?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}'; use K, M, G or T (for example 20G)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// Reads an age: a number with s, m, h, d or w (seconds, minutes, hours, days, weeks); its
/// seconds.
pub fn parse_age(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits);
    let seconds = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "'{text}' is not an age: write a number with s, m, h, d or w (for example 30d)"
            ))
        }
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not an age: it has no number (for example 30d)"))?;
    number
        .checked_mul(seconds)
        .ok_or_else(|| format!("'{text}' is too long"))
}

#[cfg(test)]
mod tests {
    use super::{parse_age, parse_size};

    #[test]
    fn ages_have_a_unit() {
        assert_eq!(parse_age("30d"), Ok(30 * 86_400));
        assert_eq!(parse_age("90m"), Ok(5400));
        assert_eq!(parse_age("2w"), Ok(14 * 86_400));
        assert!(parse_age("30").is_err());
        assert!(parse_age("d").is_err());
        assert!(parse_age("3y").is_err());
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("20G"), Ok(20 << 30));
        assert_eq!(parse_size("20GiB"), Ok(20 << 30));
        assert_eq!(parse_size("300mb"), Ok(300 << 20));
        assert_eq!(parse_size(" 2T "), Ok(2 << 40));
        assert!(parse_size("20 parsecs").is_err_and(|e| e.contains("unknown unit")));
        assert!(parse_size("G").is_err_and(|e| e.contains("for example 20G")));
    }
}
