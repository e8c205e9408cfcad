//! `b64encode` and `b64decode` with Python's text encodings (`encoding='utf-16-le'`), as
//! Ansible's filters encode the text before base64 and decode the bytes after it.

use base64::Engine as _;
use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// `b64encode(encoding='utf-8')`: the text's bytes in `encoding`, in base64.
pub(super) fn b64encode(value: String, kwargs: Kwargs) -> Result<String, Error> {
    let encoding: Option<String> = kwargs.get("encoding")?;
    kwargs.assert_all_used()?;
    let bytes = encode_text(&value, encoding.as_deref().unwrap_or("utf-8"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// `b64decode(encoding='utf-8')`: base64's bytes read as text in `encoding`.
pub(super) fn b64decode(value: String, kwargs: Kwargs) -> Result<String, Error> {
    let encoding: Option<String> = kwargs.get("encoding")?;
    kwargs.assert_all_used()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.trim().as_bytes())
        .map_err(|e| invalid(format!("b64decode: not base64: {e}")))?;
    decode_text(&bytes, encoding.as_deref().unwrap_or("utf-8"))
}

/// Python's name of an encoding, as a key: `UTF_16_LE` is `utf-16-le`, `utf8` is `utf-8`.
fn encoding_key(encoding: &str) -> String {
    match encoding.to_ascii_lowercase().replace('_', "-").as_str() {
        "utf8" => "utf-8".into(),
        "utf16" => "utf-16".into(),
        "latin1" | "latin-1" | "iso-8859-1" | "l1" => "latin-1".into(),
        "us-ascii" => "ascii".into(),
        other => other.into(),
    }
}

fn unknown_encoding(encoding: &str) -> Error {
    invalid(format!(
        "unknown encoding: {encoding} (imgbuild has utf-8, utf-16, utf-16-le, utf-16-be, latin-1 and ascii)"
    ))
}

/// `text` encoded as Python's `str.encode(encoding)` (`utf-16` with its byte-order mark).
fn encode_text(text: &str, encoding: &str) -> Result<Vec<u8>, Error> {
    let units = || text.encode_utf16();
    let narrow = |top: u32| {
        text.chars()
            .map(|c| {
                u8::try_from(u32::from(c))
                    .ok()
                    .filter(|_| u32::from(c) <= top)
            })
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| invalid(format!("'{encoding}' codec can't encode the text")))
    };
    Ok(match encoding_key(encoding).as_str() {
        "utf-8" => text.as_bytes().to_vec(),
        "utf-16-le" => units().flat_map(u16::to_le_bytes).collect(),
        "utf-16-be" => units().flat_map(u16::to_be_bytes).collect(),
        "utf-16" => [0xff, 0xfe]
            .into_iter()
            .chain(units().flat_map(u16::to_le_bytes))
            .collect(),
        "latin-1" => narrow(0xff)?,
        "ascii" => narrow(0x7f)?,
        _ => return Err(unknown_encoding(encoding)),
    })
}

/// `bytes` decoded as Python's `bytes.decode(encoding)` (`utf-16` reads a byte-order mark).
fn decode_text(bytes: &[u8], encoding: &str) -> Result<String, Error> {
    let not_text = || {
        invalid(format!(
            "b64decode: the decoded bytes are not {encoding} text"
        ))
    };
    let wide = |bytes: &[u8], little: bool| {
        if !bytes.len().is_multiple_of(2) {
            return Err(not_text());
        }
        let units = bytes.chunks(2).map(|p| match little {
            true => u16::from_le_bytes([p[0], p[1]]),
            false => u16::from_be_bytes([p[0], p[1]]),
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|_| not_text())
    };
    match encoding_key(encoding).as_str() {
        "utf-8" => String::from_utf8(bytes.to_vec()).map_err(|_| not_text()),
        "utf-16-le" => wide(bytes, true),
        "utf-16-be" => wide(bytes, false),
        "utf-16" => match bytes {
            [0xfe, 0xff, rest @ ..] => wide(rest, false),
            [0xff, 0xfe, rest @ ..] => wide(rest, true),
            _ => wide(bytes, true),
        },
        "latin-1" => Ok(bytes.iter().map(|b| char::from(*b)).collect()),
        "ascii" if bytes.is_ascii() => Ok(bytes.iter().map(|b| char::from(*b)).collect()),
        "ascii" => Err(not_text()),
        _ => Err(unknown_encoding(encoding)),
    }
}
