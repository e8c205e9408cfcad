//! Symbolic modes (`u+rwX-x,go=r`, `g=u`) applied as Ansible's file modules apply them: each
//! clause names its users and one or more operations; `X` and the copied classes (`g=u`)
//! read the mode the path had before the whole change; with no users given, `r`, `w` and
//! `x` leave the umask's bits alone.

use super::api::ModuleError;

/// The umask of the build's module process, as root's login umask.
const UMASK: u32 = 0o022;

/// The mode `mode` makes of `current` (a folder's when `is_dir`).
pub fn apply(mode: &str, current: u32, is_dir: bool) -> Result<u32, ModuleError> {
    let before = current & 0o7777;
    let mut bits = before;
    for clause in mode.split(',') {
        let bad = || ModuleError::new(format!("bad symbolic permission for mode: {clause}"));
        let first_op = clause.find(is_operator).unwrap_or(clause.len());
        let (users, mut rest) = clause.split_at(first_op);
        let use_umask = users.is_empty();
        let users = if users.is_empty() || users == "a" {
            "ugo"
        } else {
            users
        };
        if !users.chars().all(|c| "ugo".contains(c)) {
            return Err(bad());
        }
        while let Some(op) = rest.chars().next() {
            let tail = &rest[1..];
            let end = tail.find(is_operator).unwrap_or(tail.len());
            let perms = &tail[..end];
            rest = &tail[end..];
            for user in users.chars() {
                let wanted = perm_bits(user, perms, before, is_dir, use_umask).ok_or_else(bad)?;
                bits = operate(user, op, wanted, bits);
            }
        }
    }
    Ok(bits)
}

fn is_operator(c: char) -> bool {
    matches!(c, '+' | '-' | '=')
}

/// How far a class's `rwx` bits sit from the others'.
fn shift_of(user: char) -> u32 {
    match user {
        'u' => 6,
        'g' => 3,
        _ => 0,
    }
}

/// The bits `perms` stand for in `user`'s class (`None`: a letter that is no permission).
fn perm_bits(user: char, perms: &str, before: u32, is_dir: bool, use_umask: bool) -> Option<u32> {
    let shift = shift_of(user);
    let allowed = if use_umask { !UMASK & 0o7777 } else { 0o7777 };
    let has_x = is_dir || before & 0o111 != 0;
    perms.chars().try_fold(0, |acc, c| {
        let bit = match (c, user) {
            ('r', _) => (0o4 << shift) & allowed,
            ('w', _) => (0o2 << shift) & allowed,
            ('x', _) => (0o1 << shift) & allowed,
            ('X', _) if has_x => 0o1 << shift,
            ('X', _) => 0,
            ('s', 'u') => 0o4000,
            ('s', 'g') => 0o2000,
            ('t', 'o') => 0o1000,
            ('s' | 't', _) => 0,
            ('u' | 'g' | 'o', _) => ((before >> shift_of(c)) & 0o7) << shift,
            _ => return None,
        };
        Some(acc | bit)
    })
}

/// `current` after `op` with `wanted` for `user`.
fn operate(user: char, op: char, wanted: u32, current: u32) -> u32 {
    match op {
        '+' => current | wanted,
        '-' => current & !wanted,
        _ => {
            let class = match user {
                'u' => 0o4700,
                'g' => 0o2070,
                _ => 0o1007,
            };
            (current & !class) | wanted
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(text: &str, current: u32, is_dir: bool) -> u32 {
        apply(text, current, is_dir).expect("mode")
    }

    #[test]
    fn single_operations() {
        assert_eq!(mode("u+x", 0o644, false), 0o744);
        assert_eq!(mode("go-w", 0o666, false), 0o644);
        assert_eq!(mode("a=r", 0o777, false), 0o444);
        assert_eq!(mode("u=rwx,g=rx,o=", 0o000, false), 0o750);
        assert_eq!(mode("a+X", 0o644, true), 0o755);
        assert_eq!(mode("o=rwXt", 0o700, true), 0o1707);
    }

    #[test]
    fn several_operations_in_a_clause() {
        assert_eq!(mode("u+rwX-x,g-wx,o-wx,g+r,o+r", 0o755, false), 0o644);
        assert_eq!(mode("u+rwX-x,g-rwx,o=x", 0o644, false), 0o601);
        assert_eq!(mode("u=rw-x+X", 0o644, false), 0o644);
        assert_eq!(mode("u=rw-x+X", 0o700, true), 0o700);
    }

    #[test]
    fn no_users_keep_the_umask_and_classes_copy() {
        assert_eq!(mode("+w", 0o444, false), 0o644);
        assert_eq!(mode("g=u", 0o640, false), 0o660);
    }

    #[test]
    fn bad_letters_are_refused() {
        assert!(apply("u*x", 0o644, false).is_err());
        assert!(apply("u+q", 0o644, false).is_err());
        assert!(apply("k+r", 0o644, false).is_err());
    }
}
