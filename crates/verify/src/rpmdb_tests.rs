use super::*;

/// A header blob of `tags` (tag, type, count, value), as rpm stores one.
fn blob(tags: &[(u32, u32, u32, Vec<u8>)]) -> Vec<u8> {
    let mut index = Vec::new();
    let mut data = Vec::new();
    for (tag, kind, count, value) in tags {
        for word in [*tag, *kind, data.len() as u32, *count] {
            index.extend_from_slice(&word.to_be_bytes());
        }
        data.extend_from_slice(value);
    }
    let mut out = (tags.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend(index);
    out.extend(data);
    out
}

fn package() -> Vec<u8> {
    let indexes: Vec<u8> = [0u32, 1, 1].iter().flat_map(|i| i.to_be_bytes()).collect();
    blob(&[
        (NAME, STRING, 1, b"kmod-x\0".to_vec()),
        (VERSION, STRING, 1, b"24.10\0".to_vec()),
        (RELEASE, STRING, 1, b"1\0".to_vec()),
        (BASENAMES, STRING_ARRAY, 3, b"a.conf\0x.ko\0y.ko\0".to_vec()),
        (
            DIRNAMES,
            STRING_ARRAY,
            2,
            b"/etc/\0/lib/modules/k/extra/\0".to_vec(),
        ),
        (DIRINDEXES, INT32, 3, indexes),
    ])
}

#[test]
fn a_header_lists_its_files() {
    let bytes = package();
    let header = Header::parse(&bytes).expect("a header");
    assert_eq!(header.string(NAME).as_deref(), Some("kmod-x"));
    assert_eq!(
        header.files(),
        Some(vec![
            "/etc/a.conf".to_owned(),
            "/lib/modules/k/extra/x.ko".to_owned(),
            "/lib/modules/k/extra/y.ko".to_owned(),
        ])
    );
    assert_eq!(header.int32(DIRINDEXES), Some(0));
}

#[test]
fn a_broken_header_is_none_not_a_panic() {
    assert!(Header::parse(&[]).is_none());
    assert!(Header::parse(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).is_none());
    let mut cut = package();
    cut.truncate(cut.len() - 10);
    let header = Header::parse(&cut).expect("the index is whole");
    assert_eq!(header.files(), None);
    let no_files = blob(&[(NAME, STRING, 1, b"gpg-pubkey\0".to_vec())]);
    let header = Header::parse(&no_files).expect("a header");
    assert_eq!(header.files(), Some(Vec::new()));
    assert_eq!(header.string(VERSION), None);
}
