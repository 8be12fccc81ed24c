//! The three slots: which fields fill the contract's `datacenter`,
//! `worker` and `sequence` (invariant 3 of [`Layout`]).

use super::Layout;
use crate::error::Field;
use crate::name::{FieldName, MAX_FIELDS};

/// Where the three fields below the timestamp sit, in the layouts
/// [`Layout::new`] builds.
///
/// The timestamp is always the most significant field (below the sign bit,
/// if the layout has one), so IDs order by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldOrder {
    /// Timestamp, datacenter, worker, sequence (Twitter, Discord,
    /// Instagram, Mastodon).
    IdentityThenSequence,
    /// Timestamp, sequence, datacenter, worker (Sonyflake: the machine ID
    /// is the lowest field).
    SequenceThenIdentity,
}

/// Where a slot's field sits: `bits` 0 when the layout has no such field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Slot {
    pub(super) index: u8,
    pub(super) shift: u8,
    pub(super) bits: u8,
}

pub(super) const NO_SLOT: Slot = Slot {
    index: u8::MAX,
    shift: 0,
    bits: 0,
};

/// Indices of the three slots in `Layout::slots`.
pub(super) const SLOT_DATACENTER: usize = 0;
pub(super) const SLOT_WORKER: usize = 1;
pub(super) const SLOT_SEQUENCE: usize = 2;

impl Layout {
    /// Assigns the three slots by the rule of [`Layout`]: a field named
    /// `datacenter`, `worker` or `sequence` takes its own slot; of the
    /// fields left, the lowest is the sequence (if no field is named so),
    /// then from the bottom up the next fills the worker slot and the one
    /// above it the datacenter slot, each if no field is named so.
    pub(super) const fn with_slots_by_rule(mut self) -> Layout {
        self.slots = [NO_SLOT; 3];
        let len = self.len as usize;
        let mut taken = [false; MAX_FIELDS];
        let mut i = 1;
        while i < len {
            let name = self.names[i];
            let slot = if name.is("datacenter") {
                SLOT_DATACENTER
            } else if name.is("worker") {
                SLOT_WORKER
            } else if name.is("sequence") {
                SLOT_SEQUENCE
            } else {
                usize::MAX
            };
            if slot != usize::MAX {
                self.slots[slot].index = i as u8;
                taken[i] = true;
            }
            i += 1;
        }
        // The free slots, in the order the fields left fill them from the
        // bottom up.
        let order = [SLOT_SEQUENCE, SLOT_WORKER, SLOT_DATACENTER];
        let mut k = 0;
        let mut i = len;
        while i > 1 && k < order.len() {
            if self.slots[order[k]].index != u8::MAX {
                k += 1;
                continue;
            }
            i -= 1;
            if !taken[i] {
                self.slots[order[k]].index = i as u8;
                taken[i] = true;
                k += 1;
            }
        }
        self.with_slot_positions()
    }

    /// The same layout with its slots at the fields of the given indices
    /// (datacenter, worker, sequence): for a preset whose slots its own
    /// documentation draws, not the rule.
    pub(super) const fn with_slot_indices(mut self, indices: [u8; 3]) -> Layout {
        self.slots = [NO_SLOT; 3];
        let mut s = 0;
        while s < 3 {
            self.slots[s].index = indices[s];
            s += 1;
        }
        self.with_slot_positions()
    }

    /// Fills in each slot's shift and width from its field index.
    pub(super) const fn with_slot_positions(mut self) -> Layout {
        let mut s = 0;
        while s < 3 {
            let index = self.slots[s].index;
            if index == u8::MAX {
                self.slots[s] = NO_SLOT;
            } else {
                self.slots[s].shift = self.shift_of(index as usize) as u8;
                self.slots[s].bits = self.widths[index as usize];
            }
            s += 1;
        }
        self
    }

    /// The same layout with its three slot fields in `order` below the
    /// timestamp (fields beyond the slots keep their place above them).
    pub const fn with_order(self, order: FieldOrder) -> Layout {
        let wanted = match order {
            FieldOrder::IdentityThenSequence => [SLOT_DATACENTER, SLOT_WORKER, SLOT_SEQUENCE],
            FieldOrder::SequenceThenIdentity => [SLOT_SEQUENCE, SLOT_DATACENTER, SLOT_WORKER],
        };
        let mut out = Layout {
            name: "custom",
            len: 0,
            names: [FieldName::EMPTY; MAX_FIELDS],
            widths: [0; MAX_FIELDS],
            slots: [NO_SLOT; 3],
            ..self
        };
        // Fields in no slot (the timestamp, and any beyond the three) first.
        let mut i = 0;
        while i < self.len as usize {
            if self.slot_of_index(i).is_none() {
                out = out.push(self.names[i], self.widths[i], None);
            }
            i += 1;
        }
        let mut k = 0;
        while k < 3 {
            let slot = self.slots[wanted[k]];
            if slot.bits > 0 {
                let idx = slot.index as usize;
                out = out.push(self.names[idx], self.widths[idx], Some(wanted[k]));
            }
            k += 1;
        }
        out.with_slot_positions()
    }

    /// The slot of field `index`, if it fills one.
    pub(super) const fn slot_of_index(&self, index: usize) -> Option<usize> {
        let mut s = 0;
        while s < 3 {
            if self.slots[s].index as usize == index && self.slots[s].bits > 0 {
                return Some(s);
            }
            s += 1;
        }
        None
    }

    /// The name of the field in `slot` (see [`Layout`]): Instagram's
    /// `worker` is its `shard`, Sonyflake's is its `machine`, Discord's
    /// slots hold `worker`, `process` and `increment`. The time slot is
    /// `timestamp`, and a slot the layout does not have answers its own
    /// name.
    pub const fn label(&self, slot: Field) -> &str {
        let s = match slot {
            Field::Datacenter => SLOT_DATACENTER,
            Field::Worker => SLOT_WORKER,
            Field::Sequence => SLOT_SEQUENCE,
            Field::Timestamp => return self.names[0].as_str(),
            other => return other.name(),
        };
        if self.slots[s].bits == 0 {
            return slot.name();
        }
        self.names[self.slots[s].index as usize].as_str()
    }

    /// The order of the sequence and identity slots below the timestamp:
    /// [`FieldOrder::SequenceThenIdentity`] when the sequence sits above an
    /// identity field (Sonyflake).
    pub const fn order(&self) -> FieldOrder {
        let seq = self.slots[SLOT_SEQUENCE];
        let worker = self.slots[SLOT_WORKER];
        if seq.bits > 0 && worker.bits > 0 && seq.shift > worker.shift {
            FieldOrder::SequenceThenIdentity
        } else {
            FieldOrder::IdentityThenSequence
        }
    }
}
