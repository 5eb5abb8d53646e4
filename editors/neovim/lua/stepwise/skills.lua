-- The folder's skills in the chat buffer: typing `/` at the start of the prompt offers them, each with its
-- description (asked of the server each time: `stepwise.skills`), and `<C-x><C-o>` offers them too (the
-- buffer's omnifunc). A prompt `/<name> [text]` loads that skill into the turn: the server does it.
local M = {}

local api = vim.api
local execute = require('stepwise.execute').execute

---@type table<integer, { uri: string, folder: stepwise.Folder, header: fun(): integer }> by buffer
local attached = {}
---@type table<string, { name: string, description: string }[]> by folder uri, as last told
local known = {}

--- The `/word` before the cursor when it begins the prompt's first line: the word, else nil.
---@param buf integer
---@return string?
local function slash_word(buf)
  local a = attached[buf]
  local row, col = unpack(api.nvim_win_get_cursor(0))
  if not a or api.nvim_get_current_buf() ~= buf or row - 1 ~= a.header() + 1 then
    return nil
  end
  return api.nvim_get_current_line():sub(1, col):match('^/([a-z0-9-]*)$')
end

--- Completion items for the skills starting with `base`.
---@param list { name: string, description: string }[]?
---@param base string
---@return table[]
function M.items(list, base)
  local out = {}
  for _, s in ipairs(list or {}) do
    if type(s.name) == 'string' and vim.startswith(s.name, base) then
      local description = tostring(s.description or ''):gsub('%s+', ' ')
      local menu = vim.fn.strcharlen(description) > 60 and (vim.fn.strcharpart(description, 0, 59) .. '…') or description
      out[#out + 1] = { word = s.name, abbr = '/' .. s.name, menu = menu, info = description, kind = 'skill', dup = 0 }
    end
  end
  return out
end

--- Asks the server for the folder's skills; `cb(list)` with them (none when it cannot say).
---@param folder stepwise.Folder
---@param cb fun(list: table[])?
function M.fetch(folder, cb)
  execute(folder, 'stepwise.skills', nil, function(err, result)
    local list = (not err and type(result) == 'table' and type(result.skills) == 'table') and result.skills or {}
    known[folder.uri] = list
    if cb then
      cb(list)
    end
  end, true)
end

--- The popup for the `/word` being typed, if it is still being typed (in Insert mode, in the buffer).
local function show(buf)
  local word = slash_word(buf)
  if not word or not vim.fn.mode():find('^i') then
    return
  end
  local items = M.items(known[attached[buf].uri], word)
  if #items > 0 then
    vim.fn.complete(2, items)
  end
end

--- `omnifunc` of the chat buffer: after a leading `/`, the skills as last told.
function M.omnifunc(findstart, base)
  local buf = api.nvim_get_current_buf()
  if findstart == 1 then
    return slash_word(buf) and 1 or -3
  end
  local a = attached[buf]
  return a and M.items(known[a.uri], base) or {}
end

--- Completion in the chat buffer `buf` of `folder` as the user types; `header()` is the row (0-based) of its
--- last `## You`. (The chat sets the buffer's omnifunc to `M.omnifunc`.)
---@param buf integer
---@param folder stepwise.Folder
---@param header fun(): integer
function M.attach(buf, folder, header)
  attached[buf] = { uri = folder.uri, folder = folder, header = header }
  -- The popup as the user types selects nothing until chosen (a `/` alone must not become a skill's name);
  -- where 'completeopt' is the buffer's own to set.
  local info = api.nvim_get_option_info2('completeopt', {})
  local own = info.scope == 'buf' or info.global_local
  if own then
    vim.bo[buf].completeopt = 'menuone,noinsert,noselect'
  end
  local group = api.nvim_create_augroup('stepwise.skills.' .. buf, { clear = true })
  api.nvim_create_autocmd('TextChangedI', {
    group = group,
    buffer = buf,
    callback = function()
      local word = slash_word(buf)
      if not own or not word then
        return
      end
      if word == '' then
        -- a `/` just typed: asked again (a skill may have come since)
        M.fetch(folder, function()
          show(buf)
        end)
      else
        show(buf)
      end
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = buf,
    callback = function()
      attached[buf] = nil
    end,
  })
  M.fetch(folder)
end

return M
