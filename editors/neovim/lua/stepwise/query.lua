-- The server's `stepwise/query` (docs/protocol.md, "Code intelligence"): what the buffer's OTHER language
-- servers know, for the agent. Diagnostics from vim.diagnostic.get, waiting on DiagnosticChanged until each
-- document's diagnostics came after the version the agent wrote (or waitMs ran out); the rest by requests to
-- the buffer's other clients (never stepwise itself). Answered from the handler's coroutine, so the editor
-- never blocks while servers think. Positions: the stepwise client's encoding on the wire, each other
-- client's own towards it, Neovim's bytes in between.
local M = {}

local api = vim.api

local STEPWISE = 'stepwise'
--- The longest a navigation question waits for the servers (the server gives up at 10 s).
local QUERY_WAIT_MS = 9000
--- The longest a diagnostics wait lasts, whatever the server asks.
local MAX_WAIT_MS = 60000

-- buffer -> its LSP version (changedtick) when its diagnostics last changed
local published = {} ---@type table<integer, integer>
-- functions waiting for a diagnostics change
local waiters = {} ---@type table<integer, fun()>
local next_waiter = 0

--- The version clients name the buffer's text by (its changedtick once changed; the table answers 0 for
--- buffers it does not know, so it is read raw).
local function version_of(buf)
  return rawget(vim.lsp.util.buf_versions, buf) or vim.b[buf].changedtick
end

local group = api.nvim_create_augroup('stepwise_query', { clear = true })
api.nvim_create_autocmd('DiagnosticChanged', {
  group = group,
  callback = function(ev)
    if ev.buf and api.nvim_buf_is_valid(ev.buf) then
      published[ev.buf] = version_of(ev.buf)
    end
    for _, wake in pairs(waiters) do
      wake()
    end
  end,
})
api.nvim_create_autocmd('BufWipeout', {
  group = group,
  callback = function(ev)
    published[ev.buf] = nil
  end,
})

-- ---------------------------------------------------------------------------
-- positions

--- A line's text: the buffer's when loaded, else the file's (read once per question).
---@return fun(uri: string, row: integer): string?
local function line_reader()
  local files = {} ---@type table<string, string[]|false>
  return function(uri, row)
    local buf = vim.uri_to_bufnr(uri)
    if api.nvim_buf_is_loaded(buf) then
      return api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
    end
    if files[uri] == nil then
      local ok, lines = pcall(vim.fn.readfile, vim.uri_to_fname(uri))
      files[uri] = ok and lines or false
    end
    return files[uri] and files[uri][row + 1] or nil
  end
end
M._line_reader = line_reader

--- A column from one encoding to another on a line (`nil` line: kept as it is).
---@param line string?
---@param col integer
---@param from string 'utf-8'|'utf-16'|'utf-32'
---@param to string
function M.recode_col(line, col, from, to)
  if from == to or not line then
    return col
  end
  local byte = from == 'utf-8' and math.min(col, #line) or vim.str_byteindex(line, from, col, false)
  if to == 'utf-8' then
    return byte
  end
  return vim.str_utfindex(line, to, byte, false)
end

--- A range (in place) from one encoding to another.
function M.recode_range(read, uri, range, from, to)
  if from == to or type(range) ~= 'table' then
    return range
  end
  for _, p in ipairs({ range.start, range['end'] }) do
    if type(p) == 'table' then
      p.character = M.recode_col(read(uri, p.line), p.character, from, to)
    end
  end
  return range
end

--- A vim.diagnostic item as an LSP Diagnostic in `enc` (Neovim keeps byte columns).
---@param d vim.Diagnostic
---@param line_of fun(row: integer): string?
---@param enc string
function M.to_lsp_diagnostic(d, line_of, enc)
  local end_lnum = d.end_lnum or d.lnum
  local out = {
    range = {
      start = { line = d.lnum, character = M.recode_col(line_of(d.lnum), d.col or 0, 'utf-8', enc) },
      ['end'] = { line = end_lnum, character = M.recode_col(line_of(end_lnum), d.end_col or d.col or 0, 'utf-8', enc) },
    },
    severity = d.severity,
    message = d.message,
  }
  if d.source then
    out.source = d.source
  end
  if d.code ~= nil then
    out.code = d.code
  end
  return out
end

-- ---------------------------------------------------------------------------
-- diagnostics

--- The diagnostic namespaces of stepwise's own client (it publishes none; left out all the same).
local function own_namespaces()
  local out = {}
  for _, c in ipairs(vim.lsp.get_clients({ name = STEPWISE })) do
    out[vim.lsp.diagnostic.get_namespace(c.id, false)] = true
    out[vim.lsp.diagnostic.get_namespace(c.id, true)] = true
  end
  return out
end

local function item(buf, uri, enc, settled)
  local own = own_namespaces()
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if not own[d.namespace] then
      list[#list + 1] = M.to_lsp_diagnostic(d, function(row)
        return api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
      end, enc)
    end
  end
  return { uri = uri, diagnostics = list, settled = settled }
end

--- Whether a language server other than stepwise is attached to the buffer (one that may publish).
local function has_server(buf)
  -- a server still starting counts (one just started for a buffer loaded for the question): it will publish
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = buf, _uninitialized = true })) do
    if c.name ~= STEPWISE then
      return true
    end
  end
  return false
end

--- Whether a document's diagnostics came after it reached `version` (no version: any at all). A document
--- no language server serves (not loaded, or only stepwise attached) has nothing to wait for: what is
--- known of it (nothing) is all there will be, as for a file no server of the CLI's covers.
function M.settled(buf, version)
  if not buf or not has_server(buf) then
    return true
  end
  local p = published[buf]
  if not p then
    return false
  end
  return version == nil or version == vim.NIL or p >= version
end

--- Calls `done()` once `ready()` holds (checked at every diagnostics change) or after `ms`.
local function wait_until(ready, ms, done)
  if ready() then
    return done()
  end
  next_waiter = next_waiter + 1
  local id = next_waiter
  local timer = assert(vim.uv.new_timer())
  local function finish()
    if not waiters[id] then
      return
    end
    waiters[id] = nil
    timer:stop()
    timer:close()
    vim.schedule(done)
  end
  waiters[id] = function()
    if ready() then
      finish()
    end
  end
  timer:start(math.max(ms, 0), 0, finish)
end

local function diagnostics(params, enc, reply)
  local documents = params.documents
  if type(documents) ~= 'table' then
    local items = {}
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(buf) and #vim.diagnostic.get(buf) > 0 and api.nvim_buf_get_name(buf) ~= '' then
        local it = item(buf, vim.uri_from_bufnr(buf), enc, true)
        if #it.diagnostics > 0 then
          items[#items + 1] = it
        end
      end
    end
    return reply({ items = items })
  end
  local function buf_of(uri)
    local buf = vim.uri_to_bufnr(uri)
    return api.nvim_buf_is_loaded(buf) and buf or nil
  end
  -- A buffer whose file a command changed on disk is reloaded first, so its servers check the text the command
  -- left; its diagnostics from before the reload no longer count as published.
  for _, d in ipairs(documents) do
    local buf = buf_of(d.uri)
    if buf and require('stepwise.reload').if_changed(buf) then
      published[buf] = nil
    end
  end
  -- A file no buffer holds (named without a version: a command changed it, or the agent is about to edit it and
  -- its errors from before are asked) is loaded, unlisted and in no window, so the servers that attach to its
  -- filetype check it as if the user had opened it. It is the agent's (edits.lua): the agent's edit of it is
  -- written at once, so the disk has the change and the buffer is left unmodified.
  for _, d in ipairs(documents) do
    local buf = (d.version == nil or d.version == vim.NIL) and vim.uri_to_bufnr(d.uri)
    if buf and not api.nvim_buf_is_loaded(buf) then
      vim.bo[buf].buflisted = false
      if pcall(vim.fn.bufload, buf) then
        vim.b[buf].stepwise_loaded = true
      end
    end
  end
  local function all_settled()
    for _, d in ipairs(documents) do
      if not M.settled(buf_of(d.uri), d.version) then
        return false
      end
    end
    return true
  end
  local wait = math.min(math.max(tonumber(params.waitMs) or 0, 0), MAX_WAIT_MS)
  wait_until(all_settled, wait, function()
    local items = {}
    for _, d in ipairs(documents) do
      local buf = buf_of(d.uri)
      if buf then
        items[#items + 1] = item(buf, d.uri, enc, M.settled(buf, d.version))
      else
        items[#items + 1] = { uri = d.uri, diagnostics = {}, settled = true }
      end
    end
    reply({ items = items })
  end)
end

-- ---------------------------------------------------------------------------
-- navigation and rename: the buffer's other clients

local METHODS = {
  definition = 'textDocument/definition',
  references = 'textDocument/references',
  implementation = 'textDocument/implementation',
  hover = 'textDocument/hover',
  documentSymbol = 'textDocument/documentSymbol',
  workspaceSymbol = 'workspace/symbol',
  rename = 'textDocument/rename',
}

--- Every Location (or LocationLink's target) in an answer, in `enc`.
local function locations_of(result, client_enc, enc, read)
  if type(result) ~= 'table' then
    return {}
  end
  local list = result.uri and { result } or result
  local out = {}
  for _, l in ipairs(list) do
    local uri = l.uri or l.targetUri
    local range = l.range or l.targetSelectionRange or l.targetRange
    if uri and range then
      out[#out + 1] = { uri = uri, range = M.recode_range(read, uri, vim.deepcopy(range), client_enc, enc) }
    end
  end
  return out
end

--- Ranges of a WorkspaceEdit / symbols, in place, from a client's encoding to `enc`.
local function recode_result(kind, result, uri, client_enc, enc, read)
  if client_enc == enc or type(result) ~= 'table' then
    return result
  end
  local function r(u, range)
    M.recode_range(read, u, range, client_enc, enc)
  end
  if kind == 'hover' and result.range then
    r(uri, result.range)
  elseif kind == 'documentSymbol' or kind == 'workspaceSymbol' then
    local stack = vim.list_extend({}, result)
    while #stack > 0 do
      local s = table.remove(stack)
      if s.location and s.location.range then
        r(s.location.uri, s.location.range)
      end
      if s.range then
        r(uri, s.range)
      end
      if s.selectionRange then
        r(uri, s.selectionRange)
      end
      vim.list_extend(stack, s.children or {})
    end
  elseif kind == 'rename' then
    for u, edits in pairs(result.changes or {}) do
      for _, e in ipairs(edits) do
        r(u, e.range)
      end
    end
    for _, dc in ipairs(result.documentChanges or {}) do
      for _, e in ipairs(dc.edits or {}) do
        r(dc.textDocument.uri, e.range)
      end
    end
  end
  return result
end

--- Joins the clients' answers: locations and workspace symbols from all, the rest from the first that has one.
local function join(kind, answers, enc, read)
  if kind == 'definition' or kind == 'references' or kind == 'implementation' then
    local out = {}
    for _, a in ipairs(answers) do
      vim.list_extend(out, locations_of(a.result, a.enc, enc, read))
    end
    return out
  end
  if kind == 'workspaceSymbol' then
    local out = {}
    for _, a in ipairs(answers) do
      vim.list_extend(out, recode_result(kind, a.result, nil, a.enc, enc, read) or {})
    end
    return out
  end
  for _, a in ipairs(answers) do
    if type(a.result) == 'table' and next(a.result) ~= nil then
      return recode_result(kind, a.result, a.uri, a.enc, enc, read)
    end
  end
  return vim.NIL
end
M._join = join

local function navigate(params, enc, reply)
  local kind = params.kind
  local method = METHODS[kind]
  local read = line_reader()
  local buf = params.uri and vim.uri_to_bufnr(params.uri) or nil
  if buf and not api.nvim_buf_is_loaded(buf) then
    vim.fn.bufload(buf)
  end
  local clients = {}
  for _, c in ipairs(vim.lsp.get_clients(buf and { bufnr = buf } or {})) do
    if c.name ~= STEPWISE and c:supports_method(method, buf) then
      clients[#clients + 1] = c
    end
  end
  if #clients == 0 then
    return reply(join(kind, {}, enc, read))
  end
  local answers, left, replied = {}, #clients, false
  local function finish()
    if replied then
      return
    end
    replied = true
    reply(join(kind, answers, enc, read))
  end
  for _, c in ipairs(clients) do
    local p
    if kind == 'workspaceSymbol' then
      p = { query = params.query or '' }
    else
      p = { textDocument = { uri = params.uri } }
      if params.position then
        local pos = params.position
        p.position = { line = pos.line, character = M.recode_col(read(params.uri, pos.line), pos.character, enc, c.offset_encoding) }
      end
      if kind == 'references' then
        p.context = { includeDeclaration = true }
      elseif kind == 'rename' then
        p.newName = params.newName
      end
    end
    c:request(method, p, function(err, result)
      if not err and result ~= nil and result ~= vim.NIL then
        answers[#answers + 1] = { result = result, enc = c.offset_encoding, uri = params.uri }
      end
      left = left - 1
      if left == 0 then
        finish()
      end
    end, buf)
  end
  vim.defer_fn(finish, QUERY_WAIT_MS)
end

-- ---------------------------------------------------------------------------
-- the handler

--- stepwise/query, answered from the handler's coroutine (Neovim 0.11 runs server requests in one).
function M.on_query(_, params, ctx)
  local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  local enc = client and client.offset_encoding or 'utf-16'
  params = type(params) == 'table' and params or {}
  local answer = params.kind == 'diagnostics' and diagnostics or METHODS[params.kind] and navigate or nil
  if not answer then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InvalidParams, 'unknown kind ' .. tostring(params.kind))
  end
  local co, is_main = coroutine.running()
  if not co or is_main then
    -- no coroutine (an older Neovim): what is known now, without waiting
    local result = vim.NIL
    params.waitMs = 0
    answer(params, enc, function(r)
      result = r
    end)
    return result
  end
  answer(params, enc, function(result)
    vim.schedule(function()
      local ok, e = coroutine.resume(co, result)
      if not ok then
        vim.notify('stepwise: query: ' .. tostring(e), vim.log.levels.ERROR)
      end
    end)
  end)
  return coroutine.yield()
end

return M
