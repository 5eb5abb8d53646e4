-- `:Stepwise attach [path]`: images for the next prompt of a folder (`:Stepwise run`, the chat's `:w`), from a
-- file you name (anywhere: your own choice) or, without a path, from the clipboard where `wl-paste` (Wayland)
-- or `xclip` (X11) gives one. They wait until a prompt takes them (`stepwise.run`'s `images`); the server checks
-- them again (docs/images.md). Requires only util.
local M = {}

local util = require('stepwise.util')

--- The types the server takes, in the order the clipboard is asked for them.
M.types = { 'image/png', 'image/jpeg', 'image/webp', 'image/gif' }
--- The largest image the providers take (5 MB once in base64).
M.max_bytes = math.floor(5 * 1024 * 1024 / 4 * 3)
--- Images one prompt may carry.
M.max_images = 20

---@class stepwise.Image
---@field mediaType string
---@field data string base64
---@field name string what the messages call it

--- Images waiting for the next prompt, by folder URI.
---@type table<string, stepwise.Image[]>
local pending = {}

--- The media type `bytes` start like (their magic, not a name); nil for anything else.
---@param bytes string
---@return string?
function M.media_type(bytes)
  if bytes:sub(1, 8) == '\137PNG\r\n\26\n' then
    return 'image/png'
  elseif bytes:sub(1, 3) == '\255\216\255' then
    return 'image/jpeg'
  elseif bytes:sub(1, 6) == 'GIF87a' or bytes:sub(1, 6) == 'GIF89a' then
    return 'image/gif'
  elseif bytes:sub(1, 4) == 'RIFF' and bytes:sub(9, 12) == 'WEBP' then
    return 'image/webp'
  end
end

local function size(n)
  return n < 1024 * 1024 and string.format('%d KB', math.ceil(n / 1024)) or string.format('%.1f MB', n / (1024 * 1024))
end

--- `bytes` as an image to send; nil and why not.
---@return stepwise.Image?, string?
function M.image(bytes, name)
  local kind = M.media_type(bytes)
  if not kind then
    return nil, name .. ' is not a PNG, JPEG, GIF or WebP image'
  end
  if #bytes > M.max_bytes then
    return nil, string.format("%s is an image of %s; models take images up to 3.75 MB (5 MB once in base64, Anthropic's limit per image)", name, size(#bytes))
  end
  return { mediaType = kind, data = vim.base64.encode(bytes), name = name }
end

--- An image file you name.
---@return stepwise.Image?, string?
function M.from_file(path)
  local full = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  if vim.fn.isdirectory(full) == 1 then
    return nil, path .. ' is a directory'
  end
  local f, err = io.open(full, 'rb')
  if not f then
    return nil, tostring(err)
  end
  local bytes = f:read(M.max_bytes + 1) or ''
  f:close()
  return M.image(bytes, vim.fn.fnamemodify(full, ':t'))
end

--- The clipboard's tools, those this session can use: `wl-paste` under Wayland, `xclip` under X11.
local function tools()
  local out = {}
  if vim.env.WAYLAND_DISPLAY and vim.fn.executable('wl-paste') == 1 then
    out[#out + 1] = { name = 'wl-paste', list = { 'wl-paste', '--list-types' }, get = function(t) return { 'wl-paste', '--no-newline', '--type', t } end }
  end
  if vim.env.DISPLAY and vim.fn.executable('xclip') == 1 then
    out[#out + 1] = { name = 'xclip', list = { 'xclip', '-selection', 'clipboard', '-target', 'TARGETS', '-out' }, get = function(t) return { 'xclip', '-selection', 'clipboard', '-target', t, '-out' } end }
  end
  return out
end

--- The clipboard's image.
---@return stepwise.Image?, string?
function M.from_clipboard()
  local available = tools()
  if #available == 0 then
    return nil, 'no clipboard tool for images: install wl-paste (Wayland) or xclip (X11), or name a file: :Stepwise attach {path}'
  end
  for _, tool in ipairs(available) do
    local listed = vim.system(tool.list, { text = true }):wait(2000)
    local offered = listed.code == 0 and listed.stdout or ''
    for _, t in ipairs(M.types) do
      if offered:find(t, 1, true) then
        local got = vim.system(tool.get(t), { text = false }):wait(5000)
        if got.code == 0 and got.stdout and #got.stdout > 0 then
          return M.image(got.stdout, 'the clipboard\'s image')
        end
      end
    end
  end
  local names = vim.tbl_map(function(t)
    return t.name
  end, available)
  return nil, 'the clipboard holds no image (' .. table.concat(names, ', ') .. ' offers none)'
end

--- `:Stepwise attach [path]`: the image waits for the folder's next prompt.
---@param folder stepwise.Folder
---@param path string?
function M.command(folder, path)
  local image, err
  if path and vim.trim(path) ~= '' then
    image, err = M.from_file(vim.trim(path))
  else
    image, err = M.from_clipboard()
  end
  if not image then
    return util.notify(err, vim.log.levels.ERROR)
  end
  local list = pending[folder.uri] or {}
  if #list >= M.max_images then
    return util.notify(string.format('a prompt takes at most %d images', M.max_images), vim.log.levels.ERROR)
  end
  list[#list + 1] = image
  pending[folder.uri] = list
  local waiting = #list == 1 and 'it goes with your next prompt' or string.format('%d images go with your next prompt', #list)
  util.notify(string.format('image attached (%s, %s, %s); %s', image.name, image.mediaType, size(math.floor(#image.data / 4 * 3)), waiting))
end

--- The images waiting for the folder's prompt (none: nil), taken: `stepwise.run`'s `images`.
---@param folder stepwise.Folder
---@return {mediaType: string, data: string}[]?, stepwise.Image[]?
function M.take(folder)
  local list = pending[folder.uri]
  pending[folder.uri] = nil
  if not list or #list == 0 then
    return nil
  end
  return vim.tbl_map(function(i)
    return { mediaType = i.mediaType, data = i.data }
  end, list), list
end

--- Images a prompt took back (its run did not start): they wait again, before any attached since.
---@param folder stepwise.Folder
---@param list stepwise.Image[]?
function M.restore(folder, list)
  if list and #list > 0 then
    pending[folder.uri] = vim.list_extend(vim.list_extend({}, list), pending[folder.uri] or {})
  end
end

--- How many images wait for the folder's next prompt.
function M.count(folder)
  return #(pending[folder.uri] or {})
end

return M
