-- Handlers of the server's notifications (what a run streams: the plan, the status, text, tool calls, usage,
-- compactions, MCP servers, review changes) and the table of every handler of the stepwise client, requests
-- included (edits.lua, approval.lua, lenses.lua). Views that are not always there (the chat, the review signs)
-- learn through the event bus (events.lua), so nothing here requires them.
local M = {}

local util = require('stepwise.util')
local config = require('stepwise.config')
local state = require('stepwise.state')
local client = require('stepwise.client')
local plan = require('stepwise.plan')
local plan_edit = require('stepwise.plan_edit')
local marks = require('stepwise.marks')
local mcp = require('stepwise.mcp')
local log = require('stepwise.log')
local events = require('stepwise.events')
local lenses = require('stepwise.lenses')
local edits = require('stepwise.edits')
local approval = require('stepwise.approval')
local ask = require('stepwise.ask')

--- Refresh the lenses of a folder's buffers (all attached buffers when uri is nil), debounced.
M.refresh_lenses = lenses.refresh

-- ---------------------------------------------------------------------------
-- notifications

local folder_of = client.folder_of

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
  plan_edit.refresh(folder)
  marks.update(folder)
  lenses.refresh(folder.uri)
  events.emit('plan', { workspace = folder.uri, session = folder.session, by = params.by, change = params.change })
  util.emit('StepwisePlan', { workspace = folder.uri, session = folder.session, plan = folder.plan })
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
      log.run_started(folder.key, folder.run_id, folder.prompt)
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
    log.run_ended(folder.key, reason, message)
    local msg = 'run finished (' .. tostring(reason or 'idle') .. ')'
    if reason == 'cancelled' then
      msg = 'run cancelled'
    elseif reason == 'error' then
      msg = 'run failed' .. (message and (': ' .. tostring(message)) or '')
    elseif reason == 'plan_ready' then
      -- Plan first (plan_first.lua): the plan waits for the user.
      msg = 'plan ready: :Stepwise plan approve[!], or comment with > lines in :Stepwise plan edit'
    end
    if client.folder_count() > 1 then
      msg = msg .. ' in ' .. vim.fs.basename(folder.path)
    end
    if folder.session ~= state.MAIN then
      msg = msg .. ' · session ' .. (folder.title or folder.session)
    end
    util.notify(msg, config.get().notify.finished or vim.log.levels.INFO)
  end
  plan.update(folder)
  events.emit('status', {
    workspace = folder.uri,
    session = folder.session,
    state = folder.state,
    prompt = prompt,
    reason = folder.state == 'idle' and folder.reason or nil,
    message = params.message ~= vim.NIL and params.message or nil,
  })
  util.emit('StepwiseStatus', {
    workspace = folder.uri,
    session = folder.session,
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
  log.reminder(folder and folder.key, text)
  if folder then
    events.emit('reminder', { workspace = folder.uri, session = folder.session, text = text })
  end
  util.notify(text, config.get().notify.reminder or vim.log.levels.DEBUG)
  util.emit('StepwiseReminder', params)
end

local function on_text(_, params)
  local folder = folder_of(params)
  log.assistant_text(folder and folder.key, params and params.text)
  if folder and params and type(params.text) == 'string' then
    events.emit('text', { workspace = folder.uri, session = folder.session, text = params.text })
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
    state.main(folder).acting = folder.session -- the edits that follow are this session's (edits.lua)
  end
  log.tool_call(params)
  if folder then
    events.emit('tool', vim.tbl_extend('force', params, { workspace = folder.uri, session = folder.session }))
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
    plan.update(folder)
  end
end

local function on_compacted(_, params)
  local folder = folder_of(params)
  if not folder then
    return
  end
  folder.compacted = params
  log.line(folder.key, string.format('— compacted the conversation: %s → %s tokens; the plan is kept',
    tostring(params.tokensBefore), tostring(params.tokensAfter)), 'StepwiseLogHeader')
  plan.update(folder)
  util.emit('StepwiseCompacted', params)
end

--- stepwise/mcp: keeps the list in the folder's state; failed servers go to the transcript, and the plan window
--- is redrawn (its title names them).
local function on_mcp(_, params)
  if type(params) ~= 'table' or type(params.workspace) ~= 'string' then
    return
  end
  local folder = state.of(params)
  folder.mcp = mcp.servers(params)
  for _, s in ipairs(mcp.failed(folder)) do
    log.line(folder.key, '⚠ ' .. mcp.failure_line(s), 'WarningMsg')
  end
  plan.update(folder)
  util.emit('StepwiseMcp', { workspace = folder.uri, session = folder.session, servers = folder.mcp })
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
    ['stepwise/mcp'] = on_mcp,
    ['stepwise/background'] = require('stepwise.jobs').on_background,
    ['stepwise/subagent'] = require('stepwise.subagents').on_subagent,
    ['stepwise/sessions'] = require('stepwise.sessions').on_sessions,
    ['stepwise/review'] = function(_, params)
      events.emit('review', params)
    end,
    ['stepwise/diagnostics'] = function(_, params)
      events.emit('diagnostics', params)
    end,
    ['stepwise/query'] = require('stepwise.query').on_query,
    ['stepwise/saveDocuments'] = edits.on_save_documents,
    ['workspace/applyEdit'] = edits.on_apply_edit,
    ['window/showMessageRequest'] = approval.on_show_message_request,
    ['stepwise/ask'] = ask.on_ask,
  }
  -- Neovim before 0.12 has no handler for the lens refresh request; a newer built-in one wins
  if not vim.lsp.handlers['workspace/codeLens/refresh'] then
    handlers['workspace/codeLens/refresh'] = lenses.on_refresh_request
  end
  return handlers
end

return M
