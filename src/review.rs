//! A decision with what the admission's later steps made of it: the object
//! to admit and a note for the audit reason. Its own room, so that the
//! steps that make it (`annotation`) and read it (`response`) need not
//! import the pipeline that runs them.

use crate::decision::Decision;

/// A decision with what the later steps made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub decision: Decision,
    /// The object to admit when it is not the request's: the pod with its
    /// class (and the annotation), or only the annotation added.
    pub object: Option<String>,
    /// Said in the audit reason after the decision's own reason: the
    /// decision annotation left out, and why.
    pub audit_note: Option<String>,
}

impl Review {
    /// A decision that changes nothing in the object.
    pub fn of(decision: Decision) -> Self {
        Review {
            decision,
            object: None,
            audit_note: None,
        }
    }
}
