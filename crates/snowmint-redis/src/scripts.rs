//! The Lua scripts: each request of the protocol is one of them, run
//! atomically by the server (`EVALSHA`, loaded on first use). Every script
//! that judges a lease reads the server's clock (`TIME`) and its epoch
//! (`INFO`) in the same step, and refuses to run on a replica.
//!
//! One hash per identity, `<prefix>:id:<n>`:
//!
//! - `lease`: the lease token of its holder (or last holder), as a decimal
//!   string (tokens are 63-bit: never a Lua number);
//! - `holder`, `instance`: who that was (for operators; the instance token);
//! - `ttl_ms`: the longest fence that may still be open on the identity
//!   (the claimant's TTL, or the unreleased previous holder's recorded TTL,
//!   or the declared bound after a change of epoch, whichever is longest);
//! - `expires_ms`: when the lease ends, Unix ms of *Redis's* clock; `0` once
//!   revoked;
//! - `released`: `1` once the holder stopped issuing and let go;
//! - `epoch`: the history of the server that wrote the claim
//!   (`run_id/master_replid`);
//! - `mark`: "reserved until", Unix ms; only raised, only by the holder.
//!
//! And `<prefix>:meta`: `bound_ms`, the longest TTL declared for the
//! prefix (a holder with a longer one is refused), and `epoch`, the last
//! epoch a claim ran under (for operators). No key has an expiry, so no
//! `volatile-*` eviction policy can delete one; `allkeys-*` is refused.

/// Functions every script shares.
const PRELUDE: &str = r#"
local function epoch()
  local r = redis.call('INFO', 'replication')
  local role = string.match(r, 'role:(%a+)')
  if role ~= 'master' then
    error(redis.error_reply('SNOWMINT_REPLICA this server is a replica (role:' .. tostring(role) ..
      '), not the master: its data may lag the master\'s'))
  end
  local s = redis.call('INFO', 'server')
  return string.match(s, 'run_id:(%x+)') .. '/' .. string.match(r, 'master_replid:(%x+)')
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(x)
  return string.format('%.0f', x)
end
local function evicting()
  local m = redis.call('INFO', 'memory')
  local policy = string.match(m, 'maxmemory_policy:([%w%-]+)') or 'unknown'
  if string.sub(policy, 1, 7) == 'allkeys' then
    error(redis.error_reply('SNOWMINT_EVICTION maxmemory-policy is ' .. policy ..
      ': Redis may evict any key, a mark or a claim among them; set maxmemory-policy to ' ..
      'noeviction (or a volatile-* policy: snowmint sets no expiry on its keys)'))
  end
end
-- Whether the record `k` is bound to live lease `lease` under epoch `cur`.
local function holds(k, lease, cur, now)
  local r = redis.call('HMGET', k, 'lease', 'expires_ms', 'epoch')
  return r[1] == lease and tonumber(r[2] or '0') > now and r[3] == cur
end
"#;

/// What a new connection checks: `{role, maxmemory-policy, meta bound_ms
/// or '', epoch or ''}`.
pub(crate) const CHECK: &str = r#"
local r = redis.call('INFO', 'replication')
local role = string.match(r, 'role:(%a+)') or 'unknown'
local m = redis.call('INFO', 'memory')
local policy = string.match(m, 'maxmemory_policy:([%w%-]+)') or 'unknown'
local bound = redis.call('HGET', KEYS[1], 'bound_ms') or ''
local cur = ''
if role == 'master' then cur = epoch() end
return {role, policy, bound, cur}
"#;

/// KEYS: the pool's records. Per record: `taken` (0/1), `unclean` (0/1),
/// `mark` ('' if none).
pub(crate) const SCAN: &str = r#"
local cur = epoch()
local now = now_ms()
local out = {}
for i, k in ipairs(KEYS) do
  local r = redis.call('HMGET', k, 'lease', 'expires_ms', 'epoch', 'released', 'mark')
  local taken = r[1] and tonumber(r[2] or '0') > now and r[3] == cur
  local unclean = (not taken) and ((not r[1]) or r[3] ~= cur or r[4] ~= '1')
  out[#out + 1] = taken and 1 or 0
  out[#out + 1] = unclean and 1 or 0
  out[#out + 1] = r[5] or ''
end
return out
"#;

/// KEYS: the record, meta. ARGV: lease, holder, instance, ttl_ms,
/// bound_ms (the claimant's declared bound). `{'taken'}`, or `{'won',
/// lease, holder, instance, ttl_ms, released, epoch, bound_ms, cur}` of
/// what the claim replaced ('' for a field it did not have).
pub(crate) const CLAIM: &str = r#"
local cur = epoch()
evicting()
local now = now_ms()
local ttl = tonumber(ARGV[4])
local declared = redis.call('HGET', KEYS[2], 'bound_ms')
if declared and tonumber(declared) < ttl then
  error(redis.error_reply('SNOWMINT_BOUND lease-ttl ' .. ARGV[4] .. ' ms is longer than the ' ..
    'longest TTL declared for this prefix (' .. KEYS[2] .. ' bound_ms ' .. declared .. '): ' ..
    'lower --lease-ttl, or raise the bound: HSET ' .. KEYS[2] .. ' bound_ms ' .. ARGV[4]))
end
local bound = math.max(tonumber(declared or '0'), tonumber(ARGV[5]))
local r = redis.call('HMGET', KEYS[1], 'lease', 'holder', 'instance', 'ttl_ms', 'expires_ms',
  'released', 'epoch')
-- A live lease of this epoch holds it, unless it is the claimant's own (the
-- claim sent again, its first answer lost: answered from the record).
if r[1] and tonumber(r[5] or '0') > now and r[7] == cur and r[1] ~= ARGV[1] then
  return {'taken'}
end
local recorded = ttl
if r[7] ~= cur then
  recorded = math.max(ttl, bound)
elseif r[1] and r[6] ~= '1' then
  recorded = math.max(ttl, tonumber(r[4] or int(bound)))
end
redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'holder', ARGV[2], 'instance', ARGV[3],
  'ttl_ms', int(recorded), 'expires_ms', int(now + ttl), 'released', '0', 'epoch', cur)
if declared then
  redis.call('HSET', KEYS[2], 'epoch', cur)
else
  redis.call('HSET', KEYS[2], 'bound_ms', ARGV[5], 'epoch', cur)
end
return {'won', r[1] or '', r[2] or '', r[3] or '', r[4] or '', r[6] or '', r[7] or '',
  int(bound), cur}
"#;

/// KEYS: the records bound to the lease. ARGV: lease, ttl_ms. How many
/// were renewed.
pub(crate) const KEEP_ALIVE: &str = r#"
local cur = epoch()
local now = now_ms()
local n = 0
for i, k in ipairs(KEYS) do
  if holds(k, ARGV[1], cur, now) then
    redis.call('HSET', k, 'expires_ms', int(now + tonumber(ARGV[2])))
    n = n + 1
  end
end
return n
"#;

/// KEYS: the record. ARGV: lease. 1 if bound to it, 0 if not, -1 if there
/// is no record.
pub(crate) const CONFIRM: &str = r#"
local cur = epoch()
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if holds(KEYS[1], ARGV[1], cur, now_ms()) then return 1 end
return 0
"#;

/// KEYS: the record. ARGV: lease. 1 if released, 0 if not bound to it.
pub(crate) const RELEASE: &str = r#"
local cur = epoch()
if holds(KEYS[1], ARGV[1], cur, now_ms()) then
  redis.call('HSET', KEYS[1], 'released', '1')
  return 1
end
return 0
"#;

/// KEYS: the records bound to the lease. ARGV: lease. Ends it on each that
/// is still bound to it.
pub(crate) const REVOKE: &str = r#"
epoch()
for i, k in ipairs(KEYS) do
  local r = redis.call('HMGET', k, 'lease', 'expires_ms')
  if r[1] == ARGV[1] and tonumber(r[2] or '0') > 0 then
    redis.call('HSET', k, 'expires_ms', '0')
  end
end
return 1
"#;

/// KEYS: the record. The mark, or false.
pub(crate) const LOAD_MARK: &str = r#"
epoch()
return redis.call('HGET', KEYS[1], 'mark')
"#;

/// KEYS: the record. ARGV: lease, until_ms. 1 if raised (or already at
/// least that high), 0 if the record is not bound to the lease.
pub(crate) const RAISE_MARK: &str = r#"
local cur = epoch()
if not holds(KEYS[1], ARGV[1], cur, now_ms()) then return 0 end
local old = tonumber(redis.call('HGET', KEYS[1], 'mark') or '0') or 0
local new = tonumber(ARGV[2])
if new > old then redis.call('HSET', KEYS[1], 'mark', ARGV[2]) end
return 1
"#;

/// The scripts, each with the prelude.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) check: redis::Script,
    pub(crate) scan: redis::Script,
    pub(crate) claim: redis::Script,
    pub(crate) keep_alive: redis::Script,
    pub(crate) confirm: redis::Script,
    pub(crate) release: redis::Script,
    pub(crate) revoke: redis::Script,
    pub(crate) load_mark: redis::Script,
    pub(crate) raise_mark: redis::Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        let s = |body: &str| redis::Script::new(&format!("{PRELUDE}{body}"));
        Scripts {
            check: s(CHECK),
            scan: s(SCAN),
            claim: s(CLAIM),
            keep_alive: s(KEEP_ALIVE),
            confirm: s(CONFIRM),
            release: s(RELEASE),
            revoke: s(REVOKE),
            load_mark: s(LOAD_MARK),
            raise_mark: s(RAISE_MARK),
        }
    }
}
