//! A queue between threads that holds only what is queued: one lock around a
//! `VecDeque`, shared by its ends. An empty queue owns no memory of its own, where a
//! standard channel allocates ~500 bytes up front (its ends padded to cache lines) and a
//! bounded one all its slots: a terminal has three (input, control messages, the actor's
//! end), kept by every idle pane, and an API connection one for its replies (4096 lines,
//! 160 KiB). They see a few messages a second at most, so a lock is no cost here.

use std::collections::VecDeque;
use std::sync::mpsc::{RecvError, TryRecvError, TrySendError};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
    receiving: bool,
}

/// The sending end; cloned for each sender.
pub(crate) struct Tx<T>(Arc<Shared<T>>);

/// The receiving end.
pub(crate) struct Rx<T>(Arc<Shared<T>>);

pub(crate) fn queue<T>() -> (Tx<T>, Rx<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            senders: 1,
            receiving: true,
        }),
        ready: Condvar::new(),
    });
    (Tx(shared.clone()), Rx(shared))
}

impl<T> Tx<T> {
    /// Queues `item`; gives it back once the receiver is gone.
    pub(crate) fn send(&self, item: T) -> Result<(), T> {
        self.send_within(item, usize::MAX).map_err(|e| match e {
            TrySendError::Full(item) | TrySendError::Disconnected(item) => item,
        })
    }

    /// Queues `item` unless `limit` items wait already (`Full`) or the receiver is gone.
    pub(crate) fn send_within(&self, item: T, limit: usize) -> Result<(), TrySendError<T>> {
        let mut state = self.0.state.lock();
        if !state.receiving {
            return Err(TrySendError::Disconnected(item));
        }
        if state.items.len() >= limit {
            return Err(TrySendError::Full(item));
        }
        state.items.push_back(item);
        drop(state);
        self.0.ready.notify_one();
        Ok(())
    }
}

impl<T> Clone for Tx<T> {
    fn clone(&self) -> Self {
        self.0.state.lock().senders += 1;
        Tx(self.0.clone())
    }
}

impl<T> Drop for Tx<T> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.senders -= 1;
        if state.senders == 0 {
            drop(state);
            // A receiver waiting in `recv` learns that nothing more will come.
            self.0.ready.notify_all();
        }
    }
}

impl<T> Rx<T> {
    /// The next item, if one waits; `Disconnected` once none waits and every sender is gone.
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut state = self.0.state.lock();
        match state.items.pop_front() {
            Some(item) => Ok(item),
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// The next item, waiting for one; an error once none waits and every sender is gone.
    pub(crate) fn recv(&self) -> Result<T, RecvError> {
        let mut state = self.0.state.lock();
        loop {
            if let Some(item) = state.items.pop_front() {
                return Ok(item);
            }
            if state.senders == 0 {
                return Err(RecvError);
            }
            self.0.ready.wait(&mut state);
        }
    }

    /// Gives back the memory an empty queue kept from its last messages (for a terminal
    /// gone idle).
    pub(crate) fn release(&self) {
        let mut state = self.0.state.lock();
        if state.items.is_empty() && state.items.capacity() > 0 {
            state.items = VecDeque::new();
        }
    }
}

impl<T> Drop for Rx<T> {
    fn drop(&mut self) {
        let items = {
            let mut state = self.0.state.lock();
            state.receiving = false;
            std::mem::take(&mut state.items)
        };
        // Dropped outside the lock: an item may own anything (a reply channel).
        drop(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_order_and_the_ends_see_each_other_go() {
        let (tx, rx) = queue();
        let tx2 = tx.clone();
        tx.send(1).unwrap();
        tx2.send(2).unwrap();
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        tx2.send(3).unwrap();
        drop(tx2);
        // What was sent before the last sender went still comes out.
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv(), Err(RecvError));

        let (tx, rx) = queue();
        drop(rx);
        assert_eq!(tx.send(4), Err(4));
    }

    #[test]
    fn a_full_queue_refuses_and_takes_again_once_read() {
        let (tx, rx) = queue();
        tx.send_within(1, 2).unwrap();
        tx.send_within(2, 2).unwrap();
        assert!(matches!(tx.send_within(3, 2), Err(TrySendError::Full(3))));
        assert_eq!(rx.try_recv(), Ok(1));
        tx.send_within(3, 2).unwrap();
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Ok(3));
        rx.release();
        assert_eq!(rx.0.state.lock().items.capacity(), 0);
        tx.send(5).unwrap();
        assert_eq!(rx.try_recv(), Ok(5));
    }

    #[test]
    fn a_waiting_receiver_wakes_for_an_item_and_for_the_last_sender_going() {
        let (tx, rx) = queue::<u32>();
        let waiter = std::thread::spawn(move || (rx.recv(), rx.recv()));
        tx.send(7).unwrap();
        drop(tx);
        assert_eq!(waiter.join().unwrap(), (Ok(7), Err(RecvError)));
    }
}
