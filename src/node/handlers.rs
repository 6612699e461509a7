//! `status.runtimeHandlers`: which runtime handlers a node reports, and
//! the features of each, read lazily for the one handler asked about.

use crate::json_scan::Cursor;

/// `status.runtimeHandlers`, kept as the raw text of its JSON value
/// (already checked as JSON) and read only when the runtime-handler check
/// reaches the node, for the one entry it asks about: kata-deploy nodes
/// list a dozen handlers, and most nodes of a long list fail an earlier
/// filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeHandlers<'a> {
    raw: Option<&'a [u8]>,
}

/// What a node reports of one runtime handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerReport {
    /// The node reports no handlers: the field is absent, null, empty, or
    /// not a list (an older kubelet or CRI; a malformed list counts as none).
    Nothing,
    /// The node reports handlers, and not this one.
    NotListed,
    /// The node lists the handler, with these features (a feature that is
    /// absent or not a boolean is not supported).
    Listed(HandlerFeatures),
}

/// A feature of a runtime handler (`status.runtimeHandlers[].features`)
/// that the kubelet checks before it starts a pod that depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HandlerFeature {
    UserNamespaces,
    RecursiveReadOnlyMounts,
}

impl HandlerFeature {
    /// Every feature, in the order they are checked.
    pub const ALL: [HandlerFeature; 2] = [
        HandlerFeature::UserNamespaces,
        HandlerFeature::RecursiveReadOnlyMounts,
    ];

    /// The field of `features`, as the node reports it.
    pub fn field(self) -> &'static str {
        match self {
            HandlerFeature::UserNamespaces => "userNamespaces",
            HandlerFeature::RecursiveReadOnlyMounts => "recursiveReadOnlyMounts",
        }
    }

    /// What in a pod depends on it.
    pub fn asked_by(self) -> &'static str {
        match self {
            HandlerFeature::UserNamespaces => "hostUsers: false",
            HandlerFeature::RecursiveReadOnlyMounts => "recursiveReadOnly: Enabled",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of handler features: those a handler reports, or those a pod needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandlerFeatures(u8);

impl HandlerFeatures {
    /// The set with `feature` in it when `present`, out of it otherwise.
    pub fn with(self, feature: HandlerFeature, present: bool) -> Self {
        match present {
            true => HandlerFeatures(self.0 | feature.bit()),
            false => HandlerFeatures(self.0 & !feature.bit()),
        }
    }

    pub fn contains(self, feature: HandlerFeature) -> bool {
        self.0 & feature.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The first feature of this set that `reported` lacks.
    pub fn first_missing(self, reported: HandlerFeatures) -> Option<HandlerFeature> {
        (HandlerFeature::ALL.into_iter()).find(|f| self.contains(*f) && !reported.contains(*f))
    }
}

impl<'a> RuntimeHandlers<'a> {
    pub fn from_raw(raw: Option<&'a [u8]>) -> Self {
        RuntimeHandlers { raw }
    }

    /// What the node reports of the handler `name`: the first entry whose
    /// `name` equals it exactly. Entries that are not objects, or whose
    /// `name` is not a string, are ignored. Reads up to that entry only and
    /// allocates nothing (unless a name has escapes).
    pub fn report(&self, name: &str) -> HandlerReport {
        let Some(raw) = self.raw else {
            return HandlerReport::Nothing;
        };
        if raw.first() != Some(&b'[') {
            return HandlerReport::Nothing;
        }
        let mut found = None;
        let mut entries = 0usize;
        // The text was validated when the node was read: a failure here
        // cannot happen, and would mean "reports nothing".
        let read = Cursor::new(raw).array(|c| {
            entries += 1;
            c.skip_ws();
            if !c.peek_is(b'{') {
                c.skip_value()?;
                return Ok(true);
            }
            let mut matches = false;
            let mut features = HandlerFeatures::default();
            // A repeated key overrides the earlier one, as in serde_json.
            c.object(|c, key| {
                match key.as_bytes() {
                    b"name" if c.peek_is(b'"') => matches = c.string()? == name,
                    b"name" => {
                        matches = false;
                        c.skip_value()?;
                    }
                    b"features" if c.peek_is(b'{') => {
                        features = HandlerFeatures::default();
                        c.object(|c, key| {
                            let Some(feature) = (HandlerFeature::ALL.into_iter())
                                .find(|f| f.field().as_bytes() == key.as_bytes())
                            else {
                                return c.skip_value();
                            };
                            let on = c.peek_is(b't') && c.boolean()?;
                            if !on {
                                c.skip_value()?;
                            }
                            features = features.with(feature, on);
                            Ok(())
                        })?;
                    }
                    b"features" => {
                        features = HandlerFeatures::default();
                        c.skip_value()?;
                    }
                    _ => c.skip_value()?,
                }
                Ok(())
            })?;
            if matches {
                found = Some(HandlerReport::Listed(features));
            }
            Ok(found.is_none())
        });
        match (read, found) {
            (Ok(_), Some(report)) => report,
            (Ok(_), None) if entries > 0 => HandlerReport::NotListed,
            _ => HandlerReport::Nothing,
        }
    }
}
