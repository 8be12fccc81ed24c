//! TEMPORARY stand-in for the core `Generator` (branch `gen`), with the API of
//! DESIGN.md, so the server compiles before it lands. Replaced on merge.
#![allow(missing_docs, dead_code)]

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use snowmint::SnowflakeId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenerateError {
    ClockBehind { behind_ms: u64 },
    Exhausted,
    Store(StoreError),
}

impl std::fmt::Display for GenerateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}
impl std::error::Error for GenerateError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);
impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for StoreError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    first: SnowflakeId,
    len: usize,
}
impl IdRange {
    pub fn first(&self) -> SnowflakeId {
        self.first
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        false
    }
}
impl IntoIterator for IdRange {
    type Item = SnowflakeId;
    type IntoIter = std::iter::Map<std::ops::Range<u64>, fn(u64) -> SnowflakeId>;
    fn into_iter(self) -> Self::IntoIter {
        let f = self.first.get();
        (f..f + self.len as u64).map(|v| SnowflakeId::new(v).unwrap())
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct GeneratorMetrics {
    pub ids_issued: u64,
    pub clock_backwards: u64,
    pub waits: u64,
    pub borrowed_ms: u64,
    pub reservations: u64,
}

#[derive(Debug)]
pub struct FileStore {
    pub path: PathBuf,
}
impl FileStore {
    pub fn new(path: impl Into<PathBuf>) -> FileStore {
        FileStore { path: path.into() }
    }
}

#[derive(Debug)]
pub struct Generator {
    datacenter: u64,
    worker: u64,
    state: Mutex<(u64, u64)>,
    store: Option<FileStore>,
    metrics: Mutex<GeneratorMetrics>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Generator {
    pub fn new(datacenter: u64, worker: u64) -> Result<Generator, snowmint::Error> {
        snowmint::compose(snowmint::MIN_TIMESTAMP_MS, datacenter, worker, 0)?;
        Ok(Generator {
            datacenter,
            worker,
            state: Mutex::new((0, 0)),
            store: None,
            metrics: Mutex::new(GeneratorMetrics::default()),
        })
    }
    pub fn with_store(mut self, store: FileStore) -> Generator {
        self.store = Some(store);
        self
    }
    pub fn next_ids(&self, n: usize) -> Result<IdRange, GenerateError> {
        let mut st = self.state.lock().unwrap();
        let mut now = now_ms();
        if now < st.0 {
            now = st.0;
        }
        if now > st.0 {
            *st = (now, 0);
        }
        if st.1 > 4095 {
            while now_ms() <= st.0 {
                std::thread::yield_now();
            }
            *st = (now_ms(), 0);
        }
        let take = (n as u64).min(4096 - st.1);
        let first = snowmint::compose(st.0, self.datacenter, self.worker, st.1)
            .map_err(|_| GenerateError::Exhausted)?;
        st.1 += take;
        self.metrics.lock().unwrap().ids_issued += take;
        Ok(IdRange {
            first,
            len: take as usize,
        })
    }
    pub fn next_id(&self) -> Result<SnowflakeId, GenerateError> {
        Ok(self.next_ids(1)?.first())
    }
    pub fn metrics(&self) -> GeneratorMetrics {
        *self.metrics.lock().unwrap()
    }
    pub fn persist_last_issued(&self) -> Result<(), StoreError> {
        if let Some(s) = &self.store {
            let last = self.state.lock().unwrap().0;
            std::fs::create_dir_all(s.path.parent().unwrap())
                .and_then(|_| std::fs::write(&s.path, last.to_string()))
                .map_err(|e| StoreError(e.to_string()))?;
        }
        Ok(())
    }
}
