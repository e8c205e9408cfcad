//! What the commands share to report: warnings, a check's report and its lines, files written
//! whole.

/// Prints warnings to standard error.
pub fn print_warnings(warnings: &[planner::plan::Warning]) {
    for w in warnings {
        let message = mirror::redact_credentials(&planner::vault::redact(&w.message));
        eprintln!("warning: {}: {message}", w.source);
    }
}

/// Prints a check's report as one JSON object or as text, and gives the exit code of its
/// verdict (1 when a check failed).
pub(super) fn report_out<R: serde::Serialize>(
    json: bool,
    report: &R,
    ok: bool,
    text: impl FnOnce(&R),
) -> Result<std::process::ExitCode, crate::Failure> {
    if json {
        let line =
            serde_json::to_string(report).map_err(|e| crate::Failure::Run(anyhow::anyhow!(e)))?;
        println!("{line}");
    } else {
        text(report);
    }
    Ok(if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// One check of a report, as a line: `  ok   id   detail` or `  FAIL id   detail`.
pub(super) fn print_check(ok: bool, id: &str, detail: &str) {
    println!("  {} {id:<20} {detail}", if ok { "ok  " } else { "FAIL" });
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, keeping
/// the file's permissions.
pub(super) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), crate::Failure> {
    let fail =
        |e: std::io::Error| crate::Failure::Run(anyhow::anyhow!("writing {}: {e}", path.display()));
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(fail)?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(fail)?;
    }
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
