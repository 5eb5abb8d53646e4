-- The server's code lenses (Keep / Undo of a change, the plan step of a hunk) in the buffers of a folder,
-- asked again when the plan or the changes move (`stepwise/plan`, `workspace/codeLens/refresh`, BufEnter).
local M = {}

local api = vim.api
local util = require('stepwise.util')
local config = require('stepwise.config')
local state = require('stepwise.state')
local client = require('stepwise.client')

local lens_seq = {} ---@type table<integer, integer> bufnr -> last request number
local lens_timer ---@type uv.uv_timer_t?
local lens_folders = {} ---@type table<string, true> folders to refresh ('*' = all buffers)

--- Ask the server for the code lenses of a buffer and display them with the built-in code lens
--- display. Own requests (rather than vim.lsp.codelens.refresh(), which drops a refresh while one
--- is in flight) so that the last plan change always wins.
---@param c vim.lsp.Client
---@param buf integer
local function request_lenses(c, buf)
  local codelens = vim.lsp.codelens
  if type(codelens.on_codelens) ~= 'function' then
    -- newer Neovim: the built-in refresh is the way
    pcall(codelens.refresh, { bufnr = buf })
    return
  end
  lens_seq[buf] = (lens_seq[buf] or 0) + 1
  local seq = lens_seq[buf]
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  util.request(c, 'textDocument/codeLens', params, function(err, result, ctx)
    if lens_seq[buf] ~= seq or not api.nvim_buf_is_loaded(buf) then
      return
    end
    ctx = ctx or {}
    ctx.bufnr = buf
    ctx.client_id = c.id
    codelens.on_codelens(err, result or {}, ctx)
  end, buf)
end

local function flush_lenses()
  lens_timer = nil
  local c = client.get()
  local folders = lens_folders
  lens_folders = {}
  if not c or not c.initialized then
    return
  end
  local bufs = {}
  if folders['*'] then
    bufs = client.folder_buffers(nil)
  else
    for uri in pairs(folders) do
      vim.list_extend(bufs, client.folder_buffers(state.get(uri)))
    end
  end
  for _, b in ipairs(bufs) do
    request_lenses(c, b)
  end
end

--- Refresh the lenses of a folder's buffers (all attached buffers when uri is nil), debounced.
---@param uri string?
function M.refresh(uri)
  if not config.get().codelens then
    return
  end
  lens_folders[uri or '*'] = true
  if not lens_timer then
    lens_timer = vim.defer_fn(flush_lenses, 30)
  end
end

--- workspace/codeLens/refresh (Neovim before 0.12 has no handler for it).
function M.on_refresh_request()
  M.refresh(nil)
  return vim.NIL
end

return M
