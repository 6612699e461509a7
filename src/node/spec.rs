//! A node's `spec`: its taints and whether it is cordoned.

use crate::json::Str;
use crate::json_scan::Cursor;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taint<'a> {
    pub key: Str<'a>,
    pub value: Option<Str<'a>>,
    pub effect: Str<'a>,
}

impl Taint<'_> {
    pub fn value(&self) -> &str {
        self.value.as_ref().map_or("", Str::as_str)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSpec<'a> {
    pub taints: Vec<Taint<'a>>,
    pub unschedulable: bool,
}

pub(super) fn read_spec<'de>(c: &mut Cursor<'de>, spec: &mut NodeSpec<'de>) -> Result<(), String> {
    c.object(|c, key| {
        match key.as_bytes() {
            b"taints" if !c.eat_null()? => {
                spec.taints.clear();
                c.array(|c| {
                    spec.taints.push(read_taint(c)?);
                    Ok(true)
                })?;
            }
            b"taints" => spec.taints.clear(),
            b"unschedulable" => spec.unschedulable = !c.eat_null()? && c.boolean()?,
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

fn read_taint<'de>(c: &mut Cursor<'de>) -> Result<Taint<'de>, String> {
    let mut taint = Taint::default();
    c.object(|c, key| {
        match key.as_bytes() {
            b"key" if !c.eat_null()? => taint.key = Str(c.string()?),
            b"value" if !c.eat_null()? => taint.value = Some(Str(c.string()?)),
            b"effect" if !c.eat_null()? => taint.effect = Str(c.string()?),
            b"key" | b"effect" => {}
            b"value" => taint.value = None,
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(taint)
}
