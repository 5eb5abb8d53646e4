-- The conversation as a buffer (`:Stepwise chat`, `stepwise://chat`, filetype markdown): the plan on top,
-- the conversation below it as it streams, and the prompt after the last line `## You` (`:w` sends it; during
-- a run it steers). History comes from `stepwise.conversation` when the buffer is made (after a restart too).
-- Streaming only appends or rewrites the last lines, or a child's (`task`) under its call: never the whole
-- buffer. A buffer per session of a folder:
-- `stepwise://chat` the folder's own, `stepwise://chat/<session>` another; `:w` sends to the buffer's session.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')
local events = require('stepwise.events')
local execute = require('stepwise.execute').execute
local blocks = require('stepwise.chat_blocks')
local ask = require('stepwise.ask')
local skills = require('stepwise.skills')
local children = require('stepwise.chat_subagents')

local edit, header_row, one_line, plan_lines = blocks.edit, blocks.header_row, blocks.one_line, blocks.plan_lines
local add_user, add_text, add_tool, add_note = blocks.add_user, blocks.add_text, blocks.add_tool, blocks.add_note
local is_planning, apply = blocks.is_planning, children.apply

M.name = 'stepwise://chat'
M.prompt_header = blocks.prompt_header
M.agent_header = blocks.agent_header
M._set_plan = blocks._set_plan

---@type table<string, stepwise.Chat> by session key (state.key)
local chats = {}
local unsubscribe ---@type fun()[]?

-- ---------------------------------------------------------------------------
-- live events

--- The chats of a session (all chats when key is nil).
---@param key string?
---@return stepwise.Chat[]
local function chats_for(key)
  local out = {}
  for k, ch in pairs(chats) do
    if api.nvim_buf_is_valid(ch.buf) and (key == nil or k == key) then
      out[#out + 1] = ch
    end
  end
  return out
end

--- The key of the session an event is about.
local function key_of(d)
  return d and type(d.workspace) == 'string' and state.key(d.workspace, d.session) or nil
end

local function dispatch(kind, d)
  for _, ch in ipairs(chats_for(kind ~= 'approval' and key_of(d) or nil)) do
    if ch.queue then
      ch.queue[#ch.queue + 1] = { kind, d }
    else
      edit(ch, function()
        apply[kind](ch, d)
      end)
      util.emit('StepwiseChat', { workspace = ch.uri, session = ch.session, kind = kind })
    end
  end
end

local function subscribe()
  if unsubscribe then
    return
  end
  unsubscribe = {}
  -- questions (stepwise/ask) are drawn here while the session's chat is in a window
  ask.shown = function(key)
    for _, ch in ipairs(chats_for(key)) do
      if vim.fn.bufwinid(ch.buf) ~= -1 then
        return true
      end
    end
    return false
  end
  for _, kind in ipairs({ 'text', 'tool', 'reminder', 'status', 'plan', 'approval', 'ask', 'asked', 'diagnostics', 'job_ended', 'subagent' }) do
    unsubscribe[#unsubscribe + 1] = events.on(kind, function(d)
      dispatch(kind, d)
    end)
  end
  -- a reset or a rewind changed the conversation: show it again as the server has it
  unsubscribe[#unsubscribe + 1] = events.on('reload', function(d)
    for _, ch in ipairs(chats_for(key_of(d))) do
      if not ch.queue then
        ch.queue = {}
        M._load(ch, state.session(ch.uri, ch.session))
      end
    end
  end)
  -- the folder's sessions were listed: their titles head their chats
  unsubscribe[#unsubscribe + 1] = events.on('sessions', function(d)
    for _, ch in ipairs(chats_for(nil)) do
      if ch.uri == d.workspace and ch.session ~= state.MAIN and not ch.queue then
        M._set_plan(ch)
      end
    end
  end)
end

-- ---------------------------------------------------------------------------
-- history

--- Show the saved conversation (entries of stepwise.conversation), then what streamed meanwhile.
---@param ch stepwise.Chat
---@param entries table[]
function M._restore(ch, entries)
  edit(ch, function()
    local row = header_row(ch)
    api.nvim_buf_set_lines(ch.buf, ch.plan_n, row - 1, false, {})
    ch.speaker, ch.last, ch.tools, ch.subs = nil, nil, {}, {}
    for _, e in ipairs(entries) do
      local kind = e.kind
      if type(e.subagent) == 'string' then
        -- a child's entry, after its `task` call
        children.restored_entry(ch, e)
      elseif kind == 'user' or kind == 'steer' then
        add_user(ch, e.text, vim.tbl_map(function(i)
          return i.mediaType
        end, type(e.images) == 'table' and e.images or {}))
      elseif kind == 'assistant' then
        ch.last = nil -- a saved message is whole: the next one does not join it
        add_text(ch, e.text)
      elseif kind == 'tool' and type(e.tool) == 'table' and not is_planning(e.tool) then
        add_tool(ch, e.tool, 'finished')
        children.restored_task(ch, e.tool)
      elseif kind == 'reminder' then
        add_note(ch, '⚑ ' .. one_line(e.text))
      elseif kind == 'planEdit' then
        add_note(ch, '✎ you edited the plan')
      elseif kind == 'diagnostics' then
        blocks.add_diagnostics(ch, blocks.diagnostic_lines(e.text))
      elseif kind == 'background' then
        -- the `<background-results>` the model was told: the tasks' ends, not the user's words
        for _, note in ipairs(blocks.background_notes(e.text)) do
          add_note(ch, note)
        end
      end
    end
    ch.speaker = nil
  end)
  local queue = ch.queue or {}
  ch.queue = nil
  -- the session's questions still open (asked while no chat showed it) are drawn after its history
  local queued = {}
  for _, q in ipairs(queue) do
    if q[1] == 'ask' then
      queued[q[2].callId or q[2]] = true
    end
  end
  for _, q in ipairs(ask.open()) do
    if key_of(q) == ch.key and not queued[q.callId or q] then
      queue[#queue + 1] = { 'ask', q }
    end
  end
  for _, q in ipairs(queue) do
    edit(ch, function()
      apply[q[1]](ch, q[2])
    end)
  end
  util.emit('StepwiseChat', { workspace = ch.uri, session = ch.session, kind = 'restored' })
end

function M._load(ch, folder)
  execute(folder, 'stepwise.conversation', nil, function(err, result)
    if not api.nvim_buf_is_valid(ch.buf) then
      return
    end
    local entries = (not err and type(result) == 'table' and type(result.entries) == 'table') and result.entries or {}
    M._restore(ch, entries)
  end, true)
end

-- ---------------------------------------------------------------------------
-- sending

--- The prompt: the text after the last line `## You`, trimmed.
---@param buf integer
---@return string text, integer header row
function M.prompt(buf)
  local ch
  for _, c in pairs(chats) do
    if c.buf == buf then
      ch = c
    end
  end
  local row = ch and header_row(ch) or 0
  local lines = api.nvim_buf_get_lines(buf, row + 1, -1, false)
  return vim.trim(table.concat(lines, '\n')), row
end

--- `:w`: send the prompt (a steer while a run goes on); the text moves into the conversation.
---@param ch stepwise.Chat
function M.send(ch)
  local text, row = M.prompt(ch.buf)
  -- the buffer's session, also one not known since a restart (the server opens it when named)
  local folder = state.session(ch.uri, ch.session)
  local attach = require('stepwise.attach')
  -- A prompt takes the images `:Stepwise attach` gave (a steer does not: they wait for the next prompt).
  local images = folder and folder.state == 'idle' and attach.count(folder) > 0
  if text == '' and not images then
    util.notify('nothing to send: write your message below the last "' .. M.prompt_header .. '" line', vim.log.levels.WARN)
    return
  end
  if not folder then
    return
  end
  local sent_images, taken = nil, nil
  if images then
    sent_images, taken = attach.take(folder)
  end
  local names = vim.tbl_map(function(i)
    return i.name
  end, taken or {})
  local draft = api.nvim_buf_get_lines(ch.buf, row + 1, -1, false)
  local function put_back()
    -- the text is not lost: it goes back below the header
    if api.nvim_buf_is_valid(ch.buf) then
      local r = header_row(ch)
      api.nvim_buf_set_lines(ch.buf, r + 1, -1, false, draft)
    end
  end
  edit(ch, function()
    api.nvim_buf_set_lines(ch.buf, row + 1, -1, false, { '' })
    if ch.queue then
      -- the history is still loading: shown after it
      ch.queue[#ch.queue + 1] = { 'user', { text = text, names = names } }
    else
      add_user(ch, text, names)
    end
  end)
  vim.bo[ch.buf].modified = false
  for _, w in ipairs(vim.fn.win_findbuf(ch.buf)) do
    api.nvim_win_set_cursor(w, { api.nvim_buf_line_count(ch.buf), 0 })
  end
  local function sent(kind, err)
    if err then
      put_back()
      attach.restore(folder, taken)
    end
    util.emit('StepwiseChatSent', { workspace = ch.uri, session = ch.session, kind = kind, text = text, error = err and err.message })
  end
  local function steer()
    execute(folder, 'stepwise.steer', { text = text }, function(err)
      sent('steer', err)
    end)
  end
  if folder.state ~= 'idle' then
    return steer()
  end
  folder.prompt = text
  execute(folder, 'stepwise.run', { prompt = text, images = sent_images }, function(err, result)
    if err then
      -- a run started meanwhile (from elsewhere): the text steers it
      if tostring(err.message or ''):find('already in progress', 1, true) then
        return steer()
      end
      util.notify('stepwise.run: ' .. tostring(err.message or err), vim.log.levels.WARN)
    elseif type(result) == 'table' and result.runId then
      folder.run_id = result.runId
    end
    sent('run', err)
  end, true)
end

-- ---------------------------------------------------------------------------
-- the buffer

--- The names a chat buffer may take, the first one free: the folder's own session `stepwise://chat` (the
--- first folder's) or `stepwise://chat/<folder name>`, another session `stepwise://chat/<session>`.
local function names(folder)
  local base = vim.fs.basename(folder.path)
  if folder.session ~= state.MAIN then
    return { M.name .. '/' .. folder.session, M.name .. '/' .. base .. '/' .. folder.session, M.name .. folder.path .. '/' .. folder.session }
  end
  local taken = false
  for _, ch in pairs(chats) do
    taken = taken or ch.session == state.MAIN
  end
  return { not taken and M.name or (M.name .. '/' .. base), M.name .. folder.path }
end

local function make_buf(folder)
  local buf = api.nvim_create_buf(true, false)
  for _, name in ipairs(names(folder)) do
    -- taken (another folder with that name): the next one tells them apart
    if pcall(api.nvim_buf_set_name, buf, name) then
      break
    end
  end
  vim.b[buf].stepwise_session = folder.key
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].swapfile = false
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].filetype = 'markdown'
  local ch = { buf = buf, uri = folder.uri, key = folder.key, session = folder.session, plan_n = 0, tools = {}, queue = {} }
  local lines = plan_lines(folder)
  ch.plan_n = #lines
  vim.list_extend(lines, { '', M.prompt_header, '' })
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modified = false
  chats[folder.key] = ch
  local group = api.nvim_create_augroup('stepwise.chat.' .. buf, { clear = true })
  api.nvim_create_autocmd('BufWriteCmd', {
    group = group,
    buffer = buf,
    callback = function()
      M.send(ch)
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = buf,
    callback = function()
      if chats[ch.key] == ch then
        chats[ch.key] = nil
      end
    end,
  })
  local function cancel()
    execute(folder, 'stepwise.cancel')
  end
  vim.keymap.set({ 'n', 'i' }, '<C-c>', cancel, { buffer = buf, desc = 'stepwise: cancel the run' })
  for key, choice in pairs({ a = 'allow', s = 'allowSession', d = 'deny' }) do
    vim.keymap.set('n', '<LocalLeader>' .. key, function()
      ask.answer(choice, folder.key)
    end, { buffer = buf, desc = 'stepwise: ' .. ask.title(choice) })
  end
  subscribe()
  M._load(ch, folder)
  -- `/` at the start of the prompt: the folder's skills (<C-x><C-o> too)
  skills.attach(buf, folder, function()
    return header_row(ch)
  end)
  vim.bo[buf].omnifunc = "v:lua.require'stepwise.skills'.omnifunc"
  return ch
end

--- The chat of a folder's session (made, and its history loaded, on first use).
---@param folder stepwise.Folder
---@return stepwise.Chat
function M.get(folder)
  local ch = chats[folder.key]
  if ch and api.nvim_buf_is_valid(ch.buf) then
    return ch
  end
  return make_buf(folder)
end

--- The windows showing a chat of another session of the folder.
local function sibling_windows(ch)
  local out = {}
  for _, other in ipairs(chats_for(nil)) do
    if other.uri == ch.uri and other ~= ch then
      vim.list_extend(out, vim.fn.win_findbuf(other.buf))
    end
  end
  return out
end

--- `:Stepwise chat`: show the session's chat (in the window of the folder's other chat, if one shows, else in a
--- split on the right) or go to it, cursor on the prompt.
---@param folder stepwise.Folder
---@return integer buf
function M.open(folder)
  local ch = M.get(folder)
  local wins = vim.fn.win_findbuf(ch.buf)
  local siblings = sibling_windows(ch)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
  elseif #siblings > 0 then
    api.nvim_set_current_win(siblings[1])
    api.nvim_win_set_buf(0, ch.buf)
  else
    vim.cmd(vim.o.columns >= 120 and 'botright vsplit' or 'botright split')
    api.nvim_win_set_buf(0, ch.buf)
    vim.wo.wrap = true
    vim.wo.linebreak = true
  end
  api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(ch.buf), 0 })
  return ch.buf
end

--- The chat of a session if it has one (made by nothing).
---@param folder stepwise.Folder
---@return stepwise.Chat?
function M.find(folder)
  local ch = chats[folder.key]
  return ch and api.nvim_buf_is_valid(ch.buf) and ch or nil
end

--- Wipe a session's chat (the session was discarded).
---@param folder stepwise.Folder
function M.close(folder)
  local ch = chats[folder.key]
  if ch and api.nvim_buf_is_valid(ch.buf) then
    api.nvim_buf_delete(ch.buf, { force = true })
  end
end

--- The chat of a buffer, if it is one.
---@param buf integer
---@return stepwise.Chat?
function M.of_buf(buf)
  for _, ch in pairs(chats) do
    if ch.buf == buf then
      return ch
    end
  end
end

return M
