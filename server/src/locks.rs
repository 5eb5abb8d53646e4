//! One policy for poisoned locks: recover the data. A poisoned lock means a panic happened while it was
//! held; the run guard reports that panic, and the data behind these locks is always replaced whole (a
//! plan, a list, a set), never left half-written, so refusing it forever would only make a folder
//! unusable for the rest of the session.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, RwLock};

    #[test]
    fn poisoned_locks_give_their_data_back() {
        let m = Arc::new(Mutex::new(vec![1]));
        let l = Arc::new(RwLock::new(7));
        let (m2, l2) = (m.clone(), l.clone());
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            let _w = l2.write().unwrap();
            panic!("poison both");
        })
        .join();
        assert!(m.is_poisoned() && l.is_poisoned());
        super::lock(&m).push(2);
        assert_eq!(*super::lock(&m), vec![1, 2]);
        *super::write(&l) += 1;
        assert_eq!(*super::read(&l), 8);
    }
}
