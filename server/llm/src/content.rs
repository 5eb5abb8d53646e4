//! A message's blocks, shared copy-on-write: copies of a conversation (the request encoder's, the
//! checkpoints', the session saver's) share them, and a message changed in any way after it was copied
//! gets blocks of its own. So "is this still the message I encoded?" is a pointer comparison, exact by
//! construction, where comparing the blocks walked the whole history every round (a tenth of a 200-round
//! session's instructions, growing with the history).

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Block;

#[derive(Debug, Clone, Default)]
pub struct Content(Arc<Vec<Block>>);

impl Content {
    /// Whether both are the same shared blocks: then they are equal, and stay so (a change copies).
    pub fn same(&self, other: &Content) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Content {
    type Target = Vec<Block>;
    fn deref(&self) -> &Vec<Block> {
        &self.0
    }
}

impl DerefMut for Content {
    /// The blocks to change: copied first when anything else holds them.
    fn deref_mut(&mut self) -> &mut Vec<Block> {
        Arc::make_mut(&mut self.0)
    }
}

impl From<Vec<Block>> for Content {
    fn from(blocks: Vec<Block>) -> Content {
        Content(Arc::new(blocks))
    }
}

impl PartialEq for Content {
    fn eq(&self, other: &Content) -> bool {
        self.same(other) || *self.0 == *other.0
    }
}

impl<'a> IntoIterator for &'a Content {
    type Item = &'a Block;
    type IntoIter = std::slice::Iter<'a, Block>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Content {
    type Item = &'a mut Block;
    type IntoIter = std::slice::IterMut<'a, Block>;
    fn into_iter(self) -> Self::IntoIter {
        Arc::make_mut(&mut self.0).iter_mut()
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
        Vec::<Block>::deserialize(d).map(Content::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }

    #[test]
    fn a_copy_is_the_same_until_either_changes() {
        let mut a = Content::from(vec![text("one")]);
        let b = a.clone();
        assert!(a.same(&b));
        a.push(text("two"));
        assert!(!a.same(&b), "changing a shared copy gives it blocks of its own");
        assert_eq!(b.len(), 1);
        let mut c = b.clone();
        for block in &mut c {
            *block = text("changed");
        }
        assert!(!c.same(&b) && *b == vec![text("one")]);
        let d = Content::from(vec![text("one")]);
        assert!(!d.same(&b) && d == b, "equal blocks made apart are equal, not the same");
    }
}
