//! A response is one turn of one thread, and its id says which: `resp_` followed by the
//! thread's and the turn's UUIDs in hex. No table maps one to the other, so an id stays
//! valid as long as the rollout does, across restarts, with nothing else to keep.

use std::fmt;
use std::str::FromStr;

use rein_protocol::{ThreadId, TurnId};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResponseId {
    pub thread: ThreadId,
    pub turn: TurnId,
}

impl fmt::Display for ResponseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "resp_{}{}",
            self.thread.as_uuid().simple(),
            self.turn.as_uuid().simple()
        )
    }
}

/// Not an id this server gives out.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a response id of this server")]
pub struct NotAnId(pub String);

impl FromStr for ResponseId {
    type Err = NotAnId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || NotAnId(s.to_owned());
        let hex = s.strip_prefix("resp_").ok_or_else(bad)?;
        if hex.len() != 64 || !hex.is_ascii() {
            return Err(bad());
        }
        let (thread, turn) = hex.split_at(32);
        let thread = Uuid::try_parse(thread).map_err(|_| bad())?;
        let turn = Uuid::try_parse(turn).map_err(|_| bad())?;
        Ok(Self {
            thread: ThreadId::from_uuid(thread),
            turn: TurnId::from_uuid(turn),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_names_its_thread_and_turn_and_reads_back() {
        let id = ResponseId {
            thread: ThreadId::new(),
            turn: TurnId::new(),
        };
        let text = id.to_string();
        assert_eq!(text.len(), 5 + 64);
        assert_eq!(text.parse::<ResponseId>().ok(), Some(id));
        for bad in ["", "resp_", "msg_00", &text[1..], &format!("{text}0")] {
            assert!(bad.parse::<ResponseId>().is_err(), "{bad}");
        }
    }
}
