-- How the server's edits and saves reach the user's documents: `workspace/applyEdit` (one undo block per edit,
-- a version check, the step's virtual text, files not open written) and `stepwise/saveDocuments`.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local config = require('stepwise.config')
local state = require('stepwise.state')
local marks = require('stepwise.marks')
local client = require('stepwise.client')

--- stepwise/saveDocuments: write the buffers of these documents so that shell commands see them.
function M.on_save_documents(_, params)
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
function M.on_apply_edit(_, params, ctx)
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
    -- whether the buffer was listed: the built-in application lists every buffer it edits
    t.was_listed = t.buf ~= nil and vim.bo[t.buf].buflisted
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
      f = {
        fname = t.fname,
        was_loaded = t.was_loaded,
        was_listed = t.was_listed,
        agent_owned = t.agent_owned,
        was_empty = t.was_empty,
        edits = {},
      }
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
      -- a buffer loaded for the agent (by this edit, or to answer stepwise/query) and shown nowhere stays out of
      -- the buffer list, as it was: the user's buffers do not change
      if (not t.was_loaded or t.agent_owned) and not t.was_listed and vim.fn.bufwinid(buf) == -1 then
        vim.bo[buf].buflisted = false
      end
      local line = first_line(t.edits)
      if line and not marked then
        local folder = state.containing(util.normalize(t.fname)) or client.folder_of(nil)
        -- of the folder's sessions, the one whose tool call made the edit (the latest to start one)
        folder = folder and folder.acting and state.session(folder.uri, folder.acting) or folder
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

return M
