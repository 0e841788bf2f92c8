//! TEMPORARY placeholder with the final public API; the real hierarchical
//! wheel replaces this file's internals. Do not depend on anything here but
//! the public API.
#![allow(missing_docs)]

use std::collections::BTreeMap;

#[cfg(any(test, fuzzing))]
pub mod model;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(String);
impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ConfigError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelConfig {
    bits: Vec<u32>,
}
impl WheelConfig {
    pub fn new(slot_bits: &[u32]) -> Result<WheelConfig, ConfigError> {
        if slot_bits.is_empty() {
            return Err(ConfigError("empty".into()));
        }
        Ok(WheelConfig {
            bits: slot_bits.to_vec(),
        })
    }
}
impl Default for WheelConfig {
    fn default() -> Self {
        WheelConfig { bits: vec![6; 6] }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerKey {
    index: u32,
    gen: u32,
}

#[derive(Debug)]
pub struct Expired<T> {
    pub key: TimerKey,
    pub deadline: u64,
    pub value: T,
}

pub struct Wheel<T> {
    now: u64,
    seq: u64,
    order: BTreeMap<(u64, u64), u32>,
    entries: Vec<(u32, Option<(u64, u64, T)>)>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Wheel<T> {
    pub fn new() -> Self {
        Self::with_config(WheelConfig::default())
    }
    pub fn with_config(_config: WheelConfig) -> Self {
        Wheel {
            now: 0,
            seq: 0,
            order: BTreeMap::new(),
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
    pub fn with_capacity(capacity: usize) -> Self {
        let mut w = Self::new();
        w.entries.reserve(capacity);
        w
    }
    pub fn now(&self) -> u64 {
        self.now
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let eff = deadline.max(self.now);
        self.seq += 1;
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push((0, None));
                (self.entries.len() - 1) as u32
            }
        };
        let e = &mut self.entries[index as usize];
        e.0 += 1;
        e.1 = Some((eff, self.seq, value));
        self.order.insert((eff, self.seq), index);
        self.len += 1;
        TimerKey { index, gen: e.0 }
    }
    fn live(&self, key: TimerKey) -> Option<&(u64, u64, T)> {
        let e = self.entries.get(key.index as usize)?;
        if e.0 != key.gen {
            return None;
        }
        e.1.as_ref()
    }
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let (eff, seq, _) = self.live(key)?;
        self.order.remove(&(*eff, *seq));
        self.len -= 1;
        self.free.push(key.index);
        self.entries[key.index as usize].1.take().map(|e| e.2)
    }
    pub fn reset(&mut self, key: TimerKey, deadline: u64) -> bool {
        let Some((eff, seq, _)) = self.live(key) else {
            return false;
        };
        self.order.remove(&(*eff, *seq));
        self.seq += 1;
        let neweff = deadline.max(self.now);
        let e = self.entries[key.index as usize].1.as_mut().unwrap();
        e.0 = neweff;
        e.1 = self.seq;
        self.order.insert((neweff, self.seq), key.index);
        true
    }
    pub fn deadline(&self, key: TimerKey) -> Option<u64> {
        self.live(key).map(|e| e.0)
    }
    pub fn get(&self, key: TimerKey) -> Option<&T> {
        self.live(key).map(|e| &e.2)
    }
    pub fn get_mut(&mut self, key: TimerKey) -> Option<&mut T> {
        self.live(key)?;
        self.entries[key.index as usize]
            .1
            .as_mut()
            .map(|e| &mut e.2)
    }
    pub fn poll(&mut self, now: u64) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        let (&(eff, seq), &index) = self.order.iter().next()?;
        if eff > self.now {
            return None;
        }
        self.order.remove(&(eff, seq));
        let gen = self.entries[index as usize].0;
        let (_, _, value) = self.entries[index as usize].1.take().unwrap();
        self.free.push(index);
        self.len -= 1;
        Some(Expired {
            key: TimerKey { index, gen },
            deadline: eff,
            value,
        })
    }
    pub fn next_expiration(&self) -> Option<u64> {
        self.order.keys().next().map(|k| k.0)
    }
    pub fn drain(&mut self) -> impl Iterator<Item = Expired<T>> + '_ {
        let mut out = Vec::new();
        while let Some((&(eff, seq), &index)) = self.order.iter().next() {
            self.order.remove(&(eff, seq));
            let gen = self.entries[index as usize].0;
            let (_, _, value) = self.entries[index as usize].1.take().unwrap();
            self.free.push(index);
            self.len -= 1;
            out.push(Expired {
                key: TimerKey { index, gen },
                deadline: eff,
                value,
            });
        }
        out.into_iter()
    }
    pub fn shrink_to_fit(&mut self) {}
    #[cfg(any(test, fuzzing))]
    pub fn check_invariants(&self) -> Result<(), String> {
        Ok(())
    }
}
