//! A node's `metadata`: its name and the labels a scan keeps.

use crate::json::Str;
use crate::json_scan::Cursor;

/// Which keys of a map a node scan keeps. Parsing every label of thousands
/// of nodes cost more than the rest of the node list, and constraints read
/// only a few keys, so a scan keeps those and skips the other values unread.
#[derive(Debug, Clone, Copy)]
pub enum KeyFilter<'k> {
    All,
    /// These keys, sorted: a pod chooses how many (its affinity terms'
    /// keys), so a long list is searched, never walked per label.
    Only(&'k [String]),
}

impl KeyFilter<'_> {
    fn keeps_bytes(&self, key: &[u8]) -> bool {
        match self {
            KeyFilter::All => true,
            KeyFilter::Only(keys) if keys.len() <= 8 => keys.iter().any(|k| k.as_bytes() == key),
            KeyFilter::Only(keys) => keys.binary_search_by(|k| k.as_bytes().cmp(key)).is_ok(),
        }
    }
}

/// The kept labels of a node, in document order (a short list: a linear
/// search beats building a map for each node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels<'a>(pub Vec<(Str<'a>, Str<'a>)>);

impl<'a> Labels<'a> {
    /// The value of label `key`, if the node has it (and the scan kept it).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeMeta<'a> {
    pub name: Str<'a>,
    pub labels: Labels<'a>,
}

pub(super) fn read_meta<'de>(
    c: &mut Cursor<'de>,
    filter: KeyFilter<'_>,
    meta: &mut NodeMeta<'de>,
) -> Result<(), String> {
    let mut name = None;
    let labels = &mut meta.labels.0;
    labels.clear();
    c.object(|c, key| {
        match key.as_bytes() {
            b"name" => name = Some(Str(c.string()?)),
            b"labels" if !c.eat_null()? => {
                labels.clear();
                c.object(|c, key| {
                    if filter.keeps_bytes(key.as_bytes()) {
                        labels.push((Str(key.into_text()?), Str(c.string()?)));
                        Ok(())
                    } else {
                        c.skip_value()
                    }
                })?;
            }
            b"labels" => labels.clear(),
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    meta.name = name.ok_or("missing field `name`")?;
    Ok(())
}
