-- The conversation as a buffer (`:Stepwise chat`, `stepwise://chat`, filetype markdown): the plan on top,
-- the conversation below it as it streams, and the prompt after the last line `## You` (`:w` sends it; during
-- a run it steers). History comes from `stepwise.conversation` when the buffer is made (after a restart too).
-- Streaming only appends or rewrites the last lines (never the whole buffer).
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')
local events = require('stepwise.events')
local execute = require('stepwise.execute').execute
local blocks = require('stepwise.chat_blocks')
local ask = require('stepwise.ask')

local edit, header_row, one_line, plan_lines = blocks.edit, blocks.header_row, blocks.one_line, blocks.plan_lines
local add_user, add_text, add_tool, add_note = blocks.add_user, blocks.add_text, blocks.add_tool, blocks.add_note
local is_planning, apply = blocks.is_planning, blocks.apply

M.name = 'stepwise://chat'
M.prompt_header = blocks.prompt_header
M.agent_header = blocks.agent_header
M._set_plan = blocks._set_plan

---@type table<string, stepwise.Chat> by folder uri
local chats = {}
local unsubscribe ---@type fun()[]?

-- ---------------------------------------------------------------------------
-- live events

---@param uri string?
---@return stepwise.Chat[]
local function chats_for(uri)
  local out = {}
  for u, ch in pairs(chats) do
    if api.nvim_buf_is_valid(ch.buf) and (uri == nil or u == uri) then
      out[#out + 1] = ch
    end
  end
  return out
end

local function dispatch(kind, d)
  local uri = d and d.workspace
  for _, ch in ipairs(chats_for(kind == 'approval' and nil or uri)) do
    if ch.queue then
      ch.queue[#ch.queue + 1] = { kind, d }
    else
      edit(ch, function()
        apply[kind](ch, d)
      end)
      util.emit('StepwiseChat', { workspace = ch.uri, kind = kind })
    end
  end
end

local function subscribe()
  if unsubscribe then
    return
  end
  unsubscribe = {}
  -- questions (stepwise/ask) are drawn here while the folder's chat is in a window
  ask.shown = function(uri)
    for _, ch in ipairs(chats_for(uri)) do
      if vim.fn.bufwinid(ch.buf) ~= -1 then
        return true
      end
    end
    return false
  end
  for _, kind in ipairs({ 'text', 'tool', 'reminder', 'status', 'plan', 'approval', 'ask', 'asked', 'diagnostics', 'job_ended' }) do
    unsubscribe[#unsubscribe + 1] = events.on(kind, function(d)
      dispatch(kind, d)
    end)
  end
  -- a reset or a rewind changed the conversation: show it again as the server has it
  unsubscribe[#unsubscribe + 1] = events.on('reload', function(d)
    for _, ch in ipairs(chats_for(d and d.workspace)) do
      local folder = state.get(ch.uri)
      if folder and not ch.queue then
        ch.queue = {}
        M._load(ch, folder)
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
    ch.speaker, ch.last, ch.tools = nil, nil, {}
    for _, e in ipairs(entries) do
      local kind = e.kind
      if kind == 'user' or kind == 'steer' then
        add_user(ch, e.text, vim.tbl_map(function(i)
          return i.mediaType
        end, type(e.images) == 'table' and e.images or {}))
      elseif kind == 'assistant' then
        ch.last = nil -- a saved message is whole: the next one does not join it
        add_text(ch, e.text)
      elseif kind == 'tool' and type(e.tool) == 'table' and not is_planning(e.tool) then
        add_tool(ch, e.tool, 'finished')
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
  for _, q in ipairs(queue) do
    edit(ch, function()
      apply[q[1]](ch, q[2])
    end)
  end
  util.emit('StepwiseChat', { workspace = ch.uri, kind = 'restored' })
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
  local folder = state.get(ch.uri)
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
    util.emit('StepwiseChatSent', { workspace = ch.uri, kind = kind, text = text, error = err and err.message })
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

local function make_buf(folder)
  local buf = api.nvim_create_buf(true, false)
  local name = M.name
  if next(chats) ~= nil then
    name = M.name .. '/' .. vim.fs.basename(folder.path)
  end
  if not pcall(api.nvim_buf_set_name, buf, name) then
    -- taken (another folder with that name): the folder's path tells them apart
    pcall(api.nvim_buf_set_name, buf, M.name .. folder.path)
  end
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].swapfile = false
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].filetype = 'markdown'
  local ch = { buf = buf, uri = folder.uri, plan_n = 0, tools = {}, queue = {} }
  local lines = plan_lines(folder)
  ch.plan_n = #lines
  vim.list_extend(lines, { '', M.prompt_header, '' })
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modified = false
  chats[folder.uri] = ch
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
      if chats[ch.uri] == ch then
        chats[ch.uri] = nil
      end
    end,
  })
  local function cancel()
    execute(folder, 'stepwise.cancel')
  end
  vim.keymap.set({ 'n', 'i' }, '<C-c>', cancel, { buffer = buf, desc = 'stepwise: cancel the run' })
  for key, choice in pairs({ a = 'allow', s = 'allowSession', d = 'deny' }) do
    vim.keymap.set('n', '<LocalLeader>' .. key, function()
      ask.answer(choice, folder.uri)
    end, { buffer = buf, desc = 'stepwise: ' .. ask.title(choice) })
  end
  subscribe()
  M._load(ch, folder)
  return ch
end

--- The chat of a folder (made, and its history loaded, on first use).
---@param folder stepwise.Folder
---@return stepwise.Chat
function M.get(folder)
  local ch = chats[folder.uri]
  if ch and api.nvim_buf_is_valid(ch.buf) then
    return ch
  end
  return make_buf(folder)
end

--- `:Stepwise chat`: show the folder's chat in a split on the right (or go to it), cursor on the prompt.
---@param folder stepwise.Folder
---@return integer buf
function M.open(folder)
  local ch = M.get(folder)
  local wins = vim.fn.win_findbuf(ch.buf)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
  else
    vim.cmd(vim.o.columns >= 120 and 'botright vsplit' or 'botright split')
    api.nvim_win_set_buf(0, ch.buf)
    vim.wo.wrap = true
    vim.wo.linebreak = true
  end
  api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(ch.buf), 0 })
  return ch.buf
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
