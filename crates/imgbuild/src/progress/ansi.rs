//! A command's output line made fit to show: its terminal escapes (colours, cursor moves,
//! titles) and control characters taken out, and of a line redrawn with carriage returns (a
//! progress bar), only what was drawn last.

/// `line` without escape sequences or control characters; a tab becomes a space.
pub fn clean(line: &str) -> String {
    let drawn = last_drawn(line);
    let mut out = String::with_capacity(drawn.len());
    let mut chars = drawn.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => skip_escape(&mut chars),
            // C1 CSI, as some programs write it.
            '\u{9b}' => skip_csi(&mut chars),
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// What a line redrawn with `\r` shows last: the text after the last `\r` that has any.
fn last_drawn(line: &str) -> &str {
    line.split('\r')
        .rev()
        .find(|part| !part.is_empty())
        .unwrap_or_default()
}

/// Skips what follows an ESC: a CSI (`ESC [`), an OSC, DCS, SOS, PM or APC string (ended by
/// BEL or `ESC \`), or a two-character sequence.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        // Character-set designations take one more character (`ESC ( B`).
        Some('(' | ')' | '*' | '+') => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a CSI's parameters and intermediates up to its final byte (`@` to `~`).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\x40'..='\x7e').contains(&c) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn colours_cursor_moves_and_titles_are_taken_out() {
        assert_eq!(clean("\x1b[1;32mok\x1b[0m: built"), "ok: built");
        assert_eq!(clean("\x1b[2K\x1b[1Gdone"), "done");
        assert_eq!(clean("\x1b]0;make: title\x07compiling"), "compiling");
        assert_eq!(clean("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), "link");
        assert_eq!(clean("\x1b(Bplain"), "plain");
        assert_eq!(clean("\u{9b}31mred"), "red");
        assert_eq!(clean("a\tb\x08c"), "a bc");
    }

    #[test]
    fn a_redrawn_line_shows_what_was_drawn_last() {
        assert_eq!(clean(" 10%\r 55%\r100%"), "100%");
        assert_eq!(clean("100%\r"), "100%");
        assert_eq!(clean("日本語 ok"), "日本語 ok");
    }
}
