//! Who listens to a loaded thread. Threads are shared by every connection of the server
//! (the [`Hub`]); each thread keeps the connections subscribed to it, which receive its
//! notifications and approval requests, and the ones that left while staying connected,
//! which are still told when the thread closes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rein_app_server_protocol::ServerNotification;

use crate::children::SubAgents;
use crate::loaded::LoadedThreads;
use crate::outbound::Outbound;
use crate::pump::PendingRequests;

/// One client connection, unique within the server process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionId(u64);

/// What every connection of one server shares: the loaded threads, and how long a thread
/// nobody subscribes to stays loaded.
pub struct Hub {
    pub threads: Arc<LoadedThreads>,
    pub idle_unload: Duration,
    next_connection: AtomicU64,
    pub sub_agents: SubAgents,
}

impl Hub {
    pub fn new(idle_unload: Duration) -> Self {
        Self {
            threads: Arc::new(LoadedThreads::default()),
            idle_unload,
            next_connection: AtomicU64::new(0),
            sub_agents: SubAgents::default(),
        }
    }

    pub fn connection_id(&self) -> ConnectionId {
        ConnectionId(self.next_connection.fetch_add(1, Ordering::Relaxed))
    }
}

/// A connection as a thread sees it: where to send, and where it keeps the server → client
/// requests it was asked (request ids are per connection).
#[derive(Clone)]
pub struct Subscriber {
    pub connection: ConnectionId,
    pub out: Outbound,
    pub pending: Arc<PendingRequests>,
    /// Joined with a snapshot of the thread that covered its events up to this sequence
    /// number: notifications of those events are not sent to it again.
    pub seen_through: Option<u64>,
}

impl Subscriber {
    /// Whether `notification`, made from event `seq`, tells this subscriber something its
    /// join snapshot did not: the snapshot holds turns, finished items and the status, but
    /// not streamed deltas or anything else.
    pub fn is_news(&self, seq: u64, notification: &ServerNotification) -> bool {
        let in_snapshot = matches!(
            notification,
            ServerNotification::TurnStarted(_)
                | ServerNotification::TurnCompleted(_)
                | ServerNotification::ItemStarted(_)
                | ServerNotification::ItemCompleted(_)
                | ServerNotification::ThreadStatusChanged(_)
                | ServerNotification::ThreadTokenUsageUpdated(_)
        );
        !in_snapshot || self.seen_through.is_none_or(|seen| seq > seen)
    }
}

#[derive(Default)]
struct Lists {
    current: Vec<Subscriber>,
    /// Unsubscribed but still connected: told of `thread/closed` only.
    former: Vec<Subscriber>,
    /// The thread is being unloaded: nobody may subscribe any more.
    closing: bool,
}

/// The subscribers of one thread, shared by its pump and the request handlers.
#[derive(Clone, Default)]
pub struct Subscribers {
    inner: Arc<Mutex<Lists>>,
}

/// What [`Subscribers::leave`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Left {
    NotSubscribed,
    /// Others still listen.
    Left,
    /// That was the last subscriber.
    Last,
}

impl Subscribers {
    fn lock(&self) -> MutexGuard<'_, Lists> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Add `who` unless the thread is closing; false if it is. Subscribing twice is one
    /// subscription.
    pub fn join(&self, who: Subscriber) -> bool {
        let mut lists = self.lock();
        if lists.closing {
            return false;
        }
        lists.former.retain(|s| s.connection != who.connection);
        if !lists.current.iter().any(|s| s.connection == who.connection) {
            lists.current.push(who);
        }
        true
    }

    /// Stop sending `connection` this thread's notifications; with `connected`, it still
    /// hears `thread/closed`.
    pub fn leave(&self, connection: ConnectionId, connected: bool) -> Left {
        let mut lists = self.lock();
        if !connected {
            lists.former.retain(|s| s.connection != connection);
        }
        let Some(at) = lists
            .current
            .iter()
            .position(|s| s.connection == connection)
        else {
            return Left::NotSubscribed;
        };
        let gone = lists.current.remove(at);
        if connected {
            lists.former.push(gone);
        }
        if lists.current.is_empty() {
            Left::Last
        } else {
            Left::Left
        }
    }

    pub fn current(&self) -> Vec<Subscriber> {
        self.lock().current.clone()
    }

    /// Whether `other` is this very list (a sub-agent shares its root's).
    pub fn is_shared_with(&self, other: &Subscribers) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Everyone to tell that the thread closed.
    pub fn everyone(&self) -> Vec<Subscriber> {
        let lists = self.lock();
        lists.current.iter().chain(&lists.former).cloned().collect()
    }

    pub fn is_subscribed(&self, connection: ConnectionId) -> bool {
        self.lock()
            .current
            .iter()
            .any(|s| s.connection == connection)
    }

    /// Mark the thread closing if nobody subscribes; true if it now is.
    pub fn close_if_orphaned(&self) -> bool {
        let mut lists = self.lock();
        if lists.current.is_empty() {
            lists.closing = true;
        }
        lists.closing
    }

    /// Forget everyone: the thread has closed (drops their outbound queues, so their
    /// connections can end).
    pub fn clear(&self) {
        let mut lists = self.lock();
        lists.closing = true;
        lists.current.clear();
        lists.former.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscriber(hub: &Hub) -> Subscriber {
        let (out, _rx) = Outbound::new(1);
        Subscriber {
            connection: hub.connection_id(),
            out,
            pending: Arc::default(),
            seen_through: None,
        }
    }

    #[test]
    fn the_last_to_leave_is_told_and_a_closing_thread_takes_nobody() {
        let hub = Hub::new(Duration::ZERO);
        let subs = Subscribers::default();
        let (a, b) = (subscriber(&hub), subscriber(&hub));
        assert!(subs.join(a.clone()));
        assert!(subs.join(b.clone()));
        assert!(subs.join(b.clone()), "joining twice is one subscription");
        assert_eq!(subs.current().len(), 2);
        assert_eq!(subs.leave(a.connection, true), Left::Left);
        assert_eq!(subs.leave(a.connection, true), Left::NotSubscribed);
        assert!(!subs.close_if_orphaned());
        assert_eq!(subs.leave(b.connection, false), Left::Last);
        assert_eq!(
            subs.everyone().len(),
            1,
            "a still listens for thread/closed"
        );
        assert!(subs.close_if_orphaned());
        assert!(!subs.join(a), "a closing thread takes no subscriber");
    }
}
