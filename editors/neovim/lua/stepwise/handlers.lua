-- Handlers of the server's notifications and requests, for the stepwise client only.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local config = require('stepwise.config')
local state = require('stepwise.state')
local plan = require('stepwise.plan')
local marks = require('stepwise.marks')
local log = require('stepwise.log')
local events = require('stepwise.events')

-- ---------------------------------------------------------------------------
-- code lenses

local lens_seq = {} ---@type table<integer, integer> bufnr -> last request number
local lens_timer ---@type uv.uv_timer_t?
local lens_folders = {} ---@type table<string, true> folders to refresh ('*' = all buffers)

--- Ask the server for the code lenses of a buffer and display them with the built-in code lens
--- display. Own requests (rather than vim.lsp.codelens.refresh(), which drops a refresh while one
--- is in flight) so that the last plan change always wins.
---@param client vim.lsp.Client
---@param buf integer
local function request_lenses(client, buf)
  local codelens = vim.lsp.codelens
  if type(codelens.on_codelens) ~= 'function' then
    -- newer Neovim: the built-in refresh is the way
    pcall(codelens.refresh, { bufnr = buf })
    return
  end
  lens_seq[buf] = (lens_seq[buf] or 0) + 1
  local seq = lens_seq[buf]
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  util.request(client, 'textDocument/codeLens', params, function(err, result, ctx)
    if lens_seq[buf] ~= seq or not api.nvim_buf_is_loaded(buf) then
      return
    end
    ctx = ctx or {}
    ctx.bufnr = buf
    ctx.client_id = client.id
    codelens.on_codelens(err, result or {}, ctx)
  end, buf)
end

local function flush_lenses()
  lens_timer = nil
  local client = require('stepwise.client').get()
  local folders = lens_folders
  lens_folders = {}
  if not client or not client.initialized then
    return
  end
  local bufs = {}
  if folders['*'] then
    bufs = require('stepwise.client').folder_buffers(nil)
  else
    for uri in pairs(folders) do
      vim.list_extend(bufs, require('stepwise.client').folder_buffers(state.get(uri)))
    end
  end
  for _, b in ipairs(bufs) do
    request_lenses(client, b)
  end
end

--- Refresh the lenses of a folder's buffers (all attached buffers when uri is nil), debounced.
---@param uri string?
function M.refresh_lenses(uri)
  if not config.get().codelens then
    return
  end
  lens_folders[uri or '*'] = true
  if not lens_timer then
    lens_timer = vim.defer_fn(flush_lenses, 30)
  end
end

-- ---------------------------------------------------------------------------
-- notifications

local function folder_of(params)
  local uri = params and params.workspace
  if type(uri) ~= 'string' then
    local client = require('stepwise.client').get()
    local wf = client and client.workspace_folders and client.workspace_folders[1]
    uri = wf and wf.uri
  end
  if not uri then
    return nil
  end
  return state.ensure(uri)
end

local function on_plan(_, params)
  local folder = folder_of(params)
  if not folder then
    return
  end
  folder.plan = {
    items = params.items or {},
    completed = params.completed,
    total = params.total,
    revision = type(params.revision) == 'number' and params.revision or nil,
    by = params.by,
    change = params.change,
  }
  plan.update(folder)
  require('stepwise.plan_edit').refresh(folder)
  marks.update(folder)
  M.refresh_lenses(folder.uri)
  events.emit('plan', { workspace = folder.uri, by = params.by, change = params.change })
  util.emit('StepwisePlan', { workspace = folder.uri, plan = folder.plan })
  pcall(vim.cmd.redrawstatus)
end

local function on_status(_, params)
  local folder = folder_of(params)
  if not folder then
    return
  end
  local prev = folder.state
  local new_run = params.runId ~= nil and params.runId ~= vim.NIL and params.runId ~= folder.run_id
  if params.runId and params.runId ~= vim.NIL then
    folder.run_id = params.runId
  end
  folder.state = params.state or 'idle'
  local prompt -- the prompt of a run started by a command (a chat renders its own)
  if folder.state ~= 'idle' and (new_run or prev == 'idle') then
    prompt = folder.prompt_pending
    folder.prompt_pending = nil
    if not folder.logged_run or folder.logged_run ~= folder.run_id then
      folder.logged_run = folder.run_id
      log.run_started(folder.uri, folder.run_id, folder.prompt)
    end
  end
  if folder.state == 'idle' then
    local reason = params.reason
    if reason == vim.NIL then
      reason = nil
    end
    local message = params.message
    if message == vim.NIL then
      message = nil
    end
    folder.reason = reason
    marks.clear(folder)
    log.run_ended(folder.uri, reason, message)
    local msg = 'run finished (' .. tostring(reason or 'idle') .. ')'
    if reason == 'cancelled' then
      msg = 'run cancelled'
    elseif reason == 'error' then
      msg = 'run failed' .. (message and (': ' .. tostring(message)) or '')
    elseif reason == 'plan_ready' then
      -- Plan first (plan_first.lua): the plan waits for the user.
      msg = 'plan ready: :Stepwise plan approve[!], or comment with > lines in :Stepwise plan edit'
    end
    if require('stepwise.client').folder_count() > 1 then
      msg = msg .. ' in ' .. vim.fs.basename(folder.path)
    end
    util.notify(msg, config.get().notify.finished or vim.log.levels.INFO)
  end
  plan.update(folder)
  events.emit('status', {
    workspace = folder.uri,
    state = folder.state,
    prompt = prompt,
    reason = folder.state == 'idle' and folder.reason or nil,
    message = params.message ~= vim.NIL and params.message or nil,
  })
  util.emit('StepwiseStatus', {
    workspace = folder.uri,
    state = folder.state,
    runId = params.runId,
    reason = params.reason,
    message = params.message,
  })
  pcall(vim.cmd.redrawstatus)
end

local function on_reminder(_, params)
  local folder = folder_of(params)
  local text = params and params.text or ''
  log.reminder(folder and folder.uri, text)
  if folder then
    events.emit('reminder', { workspace = folder.uri, text = text })
  end
  util.notify(text, config.get().notify.reminder or vim.log.levels.DEBUG)
  util.emit('StepwiseReminder', params)
end

local function on_text(_, params)
  local folder = folder_of(params)
  log.assistant_text(folder and folder.uri, params and params.text)
  if folder and params and type(params.text) == 'string' then
    events.emit('text', { workspace = folder.uri, text = params.text })
  end
end

local function on_tool_call(_, params)
  if not params then
    return
  end
  local folder = folder_of(params)
  if folder and params.phase == 'started' then
    -- the plan step the call's edits belong to (they follow this notification)
    folder.step = type(params.step) == 'string' and params.step or nil
  end
  log.tool_call(params)
  if folder then
    events.emit('tool', vim.tbl_extend('force', params, { workspace = folder.uri }))
  end
  if params.phase == 'finished' and params.name == 'bash' then
    -- a shell command may have changed files on disk: reload the unmodified buffers ('autoread')
    vim.schedule(function()
      pcall(vim.cmd, 'silent! checktime')
    end)
  end
  util.emit('StepwiseToolCall', params)
end

local function on_usage(_, params)
  local folder = folder_of(params)
  if folder then
    folder.usage = params
    require('stepwise.plan').update(folder)
  end
end

local function on_compacted(_, params)
  local folder = folder_of(params)
  if not folder then
    return
  end
  folder.compacted = params
  log.line(folder.uri, string.format('— compacted the conversation: %s → %s tokens; the plan is kept',
    tostring(params.tokensBefore), tostring(params.tokensAfter)), 'StepwiseLogHeader')
  require('stepwise.plan').update(folder)
  util.emit('StepwiseCompacted', params)
end

-- ---------------------------------------------------------------------------
-- requests

--- stepwise/saveDocuments: write the buffers of these documents so that shell commands see them.
local function on_save_documents(_, params)
  local saved = {}
  for _, uri in ipairs(params and params.uris or {}) do
    local ok_uri, fname = pcall(vim.uri_to_fname, uri)
    local buf = ok_uri and util.find_buf(fname) or nil
    if not buf or not api.nvim_buf_is_loaded(buf) then
      -- not loaded: the file on disk is the document
      if ok_uri and vim.uv.fs_stat(fname) then
        saved[#saved + 1] = uri
      end
    elseif not vim.bo[buf].modified then
      saved[#saved + 1] = uri
    else
      local ok = pcall(api.nvim_buf_call, buf, function()
        vim.cmd('silent keepalt lockmarks write')
      end)
      if ok and not vim.bo[buf].modified then
        saved[#saved + 1] = uri
      end
    end
  end
  return { saved = saved }
end

---@param edits lsp.TextEdit[]
local function first_line(edits)
  local line
  for _, e in ipairs(edits or {}) do
    local l = e.range and e.range.start and e.range.start.line
    if l and (not line or l < line) then
      line = l
    end
  end
  return line
end

--- workspace/applyEdit: the built-in application, plus one undo block per edit, a version check that
--- answers `applied: false` (the built-in silently skips a stale edit), the step's virtual text, and
--- writing files that were not open.
local function on_apply_edit(_, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client or not params or not params.edit then
    return { applied = false, failureReason = 'no edit' }
  end
  local edit = params.edit
  local targets = {} ---@type {uri: string, version: integer?, edits: lsp.TextEdit[]}[]
  if edit.documentChanges then
    for _, ch in ipairs(edit.documentChanges) do
      if not ch.kind and ch.textDocument then
        local v = ch.textDocument.version
        targets[#targets + 1] = {
          uri = ch.textDocument.uri,
          version = v ~= vim.NIL and v or nil,
          edits = ch.edits or {},
        }
      elseif ch.kind == 'create' then
        targets[#targets + 1] = { uri = ch.uri, edits = {}, created = true }
      end
    end
  elseif edit.changes then
    for uri, edits in pairs(edit.changes) do
      targets[#targets + 1] = { uri = uri, edits = edits }
    end
  end

  -- state before: which buffers were loaded, versions
  for _, t in ipairs(targets) do
    t.fname = vim.uri_to_fname(t.uri)
    t.buf = util.find_buf(t.fname)
    t.was_loaded = t.buf ~= nil and api.nvim_buf_is_loaded(t.buf)
    if t.was_loaded then
      -- a buffer this handler loaded, unchanged since and shown nowhere, is still written like a file not open
      t.agent_owned = vim.b[t.buf].stepwise_loaded == true and not vim.bo[t.buf].modified and vim.fn.bufwinid(t.buf) == -1
      t.was_empty = api.nvim_buf_line_count(t.buf) == 1 and api.nvim_buf_get_lines(t.buf, 0, 1, false)[1] == ''
    else
      local stat = vim.uv.fs_stat(t.fname)
      t.was_empty = t.created or not stat or stat.size == 0
    end
    if t.was_loaded and t.version and t.version > 0 then
      local current = vim.lsp.util.buf_versions[t.buf] or vim.b[t.buf].changedtick
      if current and current > t.version then
        return {
          applied = false,
          failureReason = string.format(
            'the document %s changed in the editor (version %d, the edit was made for %d); read it again',
            t.fname,
            current,
            t.version
          ),
        }
      end
    end
    if t.was_loaded then
      util.break_undo(t.buf)
    end
  end

  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, edit, client.offset_encoding)
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end

  local label = type(params.label) == 'string' and params.label or nil
  -- one entry per file (a CreateFile and the TextDocumentEdit that fills it name the same file)
  local files, by_name = {}, {}
  for _, t in ipairs(targets) do
    local f = by_name[t.fname]
    if not f then
      f = { fname = t.fname, was_loaded = t.was_loaded, agent_owned = t.agent_owned, was_empty = t.was_empty, edits = {} }
      by_name[t.fname] = f
      files[#files + 1] = f
    end
    vim.list_extend(f.edits, t.edits or {})
  end
  local marked = false
  for _, t in ipairs(files) do
    local buf = util.find_buf(t.fname)
    if buf and api.nvim_buf_is_loaded(buf) then
      if t.was_empty then
        -- text ending in a newline inserted into an empty buffer leaves an empty last line, which
        -- 'eol' would write as an extra newline
        local n = api.nvim_buf_line_count(buf)
        if n > 1 and api.nvim_buf_get_lines(buf, n - 1, n, false)[1] == '' and (vim.bo[buf].eol or vim.bo[buf].fixeol) then
          api.nvim_buf_set_lines(buf, n - 1, n, false, {})
        end
      end
      util.break_undo(buf)
      if (not t.was_loaded or t.agent_owned) and config.get().write_unopened and vim.bo[buf].modified then
        pcall(api.nvim_buf_call, buf, function()
          vim.cmd('silent keepalt lockmarks write')
        end)
        vim.b[buf].stepwise_loaded = true
      end
      local line = first_line(t.edits)
      if line and not marked then
        local folder = state.containing(util.normalize(t.fname)) or folder_of(nil)
        if folder then
          marks.edited(folder, buf, line, folder.step)
          marked = true
        end
      end
    end
  end
  util.emit('StepwiseEdit', { label = label })
  return { applied = true }
end

local function level_of(type_)
  local t = tonumber(type_) or 4
  if t == 1 then
    return vim.log.levels.ERROR
  elseif t == 2 then
    return vim.log.levels.WARN
  elseif t == 3 then
    return vim.log.levels.INFO
  end
  return vim.log.levels.DEBUG
end

--- window/showMessageRequest (shell approvals): vim.ui.select, answered asynchronously when the
--- handler runs in a coroutine (Neovim 0.11+), else with whatever a synchronous select returns.
local function on_show_message_request(_, params)
  local actions = params and params.actions or {}
  local message = params and params.message or ''
  if #actions == 0 then
    util.notify(message, level_of(params and params.type))
    return vim.NIL
  end
  local opts = {
    prompt = message,
    kind = 'stepwise_approval',
    format_item = function(action)
      return (tostring(action.title):gsub('\n', ' '))
    end,
  }
  events.emit('approval', { message = message })
  local function told(choice)
    local title = type(choice) == 'table' and choice.title or 'no answer'
    events.emit('approval', { message = message, choice = tostring(title) })
  end
  local co, is_main = coroutine.running()
  if co and not is_main then
    local answered = false
    vim.ui.select(actions, opts, function(choice)
      if answered then
        return
      end
      answered = true
      told(choice)
      vim.schedule(function()
        local ok, e = coroutine.resume(co, choice or vim.NIL)
        if not ok then
          util.notify('approval: ' .. tostring(e), vim.log.levels.ERROR)
        end
      end)
    end)
    return coroutine.yield()
  end
  local result = vim.NIL
  vim.ui.select(actions, opts, function(choice)
    result = choice or vim.NIL
    told(choice)
  end)
  return result
end

local function on_lens_refresh()
  M.refresh_lenses(nil)
  return vim.NIL
end

--- The handlers table of the client config.
function M.handlers()
  local handlers = {
    ['stepwise/plan'] = on_plan,
    ['stepwise/status'] = on_status,
    ['stepwise/reminder'] = on_reminder,
    ['stepwise/assistantText'] = on_text,
    ['stepwise/toolCall'] = on_tool_call,
    ['stepwise/usage'] = on_usage,
    ['stepwise/compacted'] = on_compacted,
    ['stepwise/mcp'] = require('stepwise.mcp').on_notification,
    ['stepwise/review'] = function(_, params)
      events.emit('review', params)
    end,
    ['stepwise/saveDocuments'] = on_save_documents,
    ['workspace/applyEdit'] = on_apply_edit,
    ['window/showMessageRequest'] = on_show_message_request,
  }
  -- Neovim before 0.12 has no handler for the lens refresh request; a newer built-in one wins
  if not vim.lsp.handlers['workspace/codeLens/refresh'] then
    handlers['workspace/codeLens/refresh'] = on_lens_refresh
  end
  return handlers
end

return M
