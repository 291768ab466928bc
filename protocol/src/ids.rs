//! Identifiers. Thread, session, turn and submission ids are UUIDv7 (time-ordered, so
//! sorting by id sorts by creation) wrapped in newtypes so that a turn id can never be
//! passed where a thread id is expected.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            pub fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

uuid_id!(
    /// One conversation with its own history and submission loop.
    ThreadId
);
uuid_id!(
    /// Shared by a whole tree of threads: the root thread's id.
    SessionId
);
uuid_id!(
    /// One turn. A user turn's id equals the id of the submission that started it.
    TurnId
);
uuid_id!(
    /// One submission (an `Op` with its id) sent to a thread.
    SubmissionId
);

impl From<SubmissionId> for TurnId {
    fn from(id: SubmissionId) -> Self {
        TurnId(id.0)
    }
}

impl From<ThreadId> for SessionId {
    fn from(id: ThreadId) -> Self {
        SessionId(id.0)
    }
}

impl TurnId {
    /// A turn started by sub-agent mail uses a random id rather than a time-ordered one.
    pub fn new_random() -> Self {
        Self(Uuid::new_v4())
    }
}

/// Identifies one history item (a message, a tool call, ...). Items produced by a model
/// provider keep the provider's ids, so these are strings rather than UUIDs.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct ItemId(pub String);

impl ItemId {
    pub fn new() -> Self {
        Self(Uuid::now_v7().to_string())
    }
}

impl Default for ItemId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ItemId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_turn_id_equals_submission_id() {
        let sub = SubmissionId::new();
        assert_eq!(TurnId::from(sub).as_uuid(), sub.as_uuid());
    }

    #[test]
    fn ids_are_time_ordered_v7() {
        let a = ThreadId::new();
        let b = ThreadId::new();
        assert_eq!(a.as_uuid().get_version_num(), 7);
        assert!(a < b);
    }

    #[test]
    fn ids_round_trip_as_plain_strings() {
        let id = TurnId::new();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        let back: TurnId = serde_json::from_str(&json).unwrap();
        assert_eq!(back, id);
    }
}
uuid_id!(
    /// One remembered thing (a memory record of the memory store).
    MemoryId
);
