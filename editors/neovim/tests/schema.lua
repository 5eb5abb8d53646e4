-- The server's messages checked against docs/protocol.schema.json (generated from the server's Rust types):
-- a validator for the subset of JSON Schema that file uses ($ref, type, properties, required, items, enum,
-- const, oneOf, anyOf, minimum), and the hook that checks every stepwise/* notification the plugin receives
-- and every stepwise.* command result, so a server change that breaks a shape fails the test that saw it.
local S = {}

local function read_schema(root)
  local f = assert(io.open(root .. '/docs/protocol.schema.json', 'r'))
  local text = f:read('*a')
  f:close()
  return vim.json.decode(text, { luanil = { object = true, array = true } })
end

local function is_list(v)
  return type(v) == 'table' and (next(v) == nil or vim.islist(v))
end

local function is_object(v)
  -- An empty table may have been an empty JSON array or object: either fits.
  return type(v) == 'table' and (next(v) == nil or not vim.islist(v))
end

local checks = {
  string = function(v)
    return type(v) == 'string'
  end,
  integer = function(v)
    return type(v) == 'number' and math.floor(v) == v
  end,
  number = function(v)
    return type(v) == 'number'
  end,
  boolean = function(v)
    return type(v) == 'boolean'
  end,
  null = function(v)
    return v == vim.NIL
  end,
  array = is_list,
  object = is_object,
}

--- The problems of `value` against `schema` (empty when it fits), each naming where (`$.items[2].status`).
---@return string[]
function S.problems(doc, schema, value, where, out)
  out = out or {}
  where = where or '$'
  if schema == true or schema == nil then
    return out
  end
  if schema == false then
    out[#out + 1] = where .. ': no value allowed'
    return out
  end
  if schema['$ref'] then
    local name = schema['$ref']:match('^#/%$defs/(.+)$')
    local def = name and doc['$defs'][name]
    if not def then
      out[#out + 1] = where .. ': unresolved ' .. schema['$ref']
      return out
    end
    return S.problems(doc, def, value, where, out)
  end
  for _, key in ipairs({ 'anyOf', 'oneOf' }) do
    if schema[key] then
      local fits = 0
      for _, alt in ipairs(schema[key]) do
        if #S.problems(doc, alt, value, where) == 0 then
          fits = fits + 1
        end
      end
      if fits == 0 or (key == 'oneOf' and fits > 1) then
        out[#out + 1] = string.format('%s: %s fits %d of its %s alternatives', where, vim.inspect(value), fits, key)
        return out
      end
    end
  end
  if schema.type then
    local types = type(schema.type) == 'table' and schema.type or { schema.type }
    local ok = false
    for _, t in ipairs(types) do
      ok = ok or (checks[t] and checks[t](value))
    end
    if not ok then
      out[#out + 1] = string.format('%s: %s is not %s', where, vim.inspect(value), table.concat(types, ' or '))
      return out
    end
  end
  if schema.const ~= nil and value ~= schema.const then
    out[#out + 1] = string.format('%s: %s is not %s', where, vim.inspect(value), vim.inspect(schema.const))
  end
  if schema.enum and not vim.tbl_contains(schema.enum, value) then
    out[#out + 1] = string.format('%s: %s is none of %s', where, vim.inspect(value), table.concat(schema.enum, ', '))
  end
  if schema.minimum and type(value) == 'number' and value < schema.minimum then
    out[#out + 1] = string.format('%s: %s is below %s', where, value, schema.minimum)
  end
  if type(value) == 'table' then
    if schema.items and is_list(value) then
      for i, item in ipairs(value) do
        S.problems(doc, schema.items, item, string.format('%s[%d]', where, i - 1), out)
      end
    end
    if schema.properties and is_object(value) then
      for _, name in ipairs(schema.required or {}) do
        -- Neovim reads a JSON null inside an object as nil: absent is fine where null is.
        if value[name] == nil and #S.problems(doc, schema.properties[name], vim.NIL) > 0 then
          out[#out + 1] = string.format('%s: "%s" is missing', where, name)
        end
      end
      for name, prop in pairs(schema.properties) do
        if value[name] ~= nil then
          S.problems(doc, prop, value[name], where .. '.' .. name, out)
        end
      end
    end
  end
  return out
end

--- Everything received so far that did not fit, and how many messages were checked.
S.violations = {}
S.checked = 0

local function check(what, schema, value)
  S.checked = S.checked + 1
  local p = S.problems(S.doc, schema, value)
  if #p > 0 then
    S.violations[#S.violations + 1] = what .. ' does not fit docs/protocol.schema.json: ' .. table.concat(p, '; ')
  end
end

--- Checks what the plugin receives from now on, on the wire (as vim.lsp's RPC layer hands it over, so a
--- payload a test makes up and gives a handler itself is not taken for the server's): each notification in
--- the schema, and each command's result.
function S.install(root)
  S.doc = read_schema(root)
  local rpc = vim.lsp.rpc
  local start = rpc.start
  rpc.start = function(cmd, dispatchers, ...)
    local notification = dispatchers.notification
    dispatchers = vim.tbl_extend('force', dispatchers, {
      notification = function(method, params)
        local schema = S.doc.notifications[method]
        if schema then
          check(method, schema, params)
        end
        return notification(method, params)
      end,
    })
    local client = start(cmd, dispatchers, ...)
    local request = client.request
    client.request = function(method, params, callback, ...)
      local command = method == 'workspace/executeCommand' and type(params) == 'table' and S.doc.commands[params.command]
      if command and callback then
        local inner = callback
        callback = function(err, result)
          if not err then
            check(params.command .. "'s result", command.result, result == nil and vim.NIL or result)
          end
          return inner(err, result)
        end
      end
      return request(method, params, callback, ...)
    end
    return client
  end
end

--- Fails (and forgets them) when anything received did not fit: the runner calls it after each test.
function S.after_test()
  local v = S.violations
  S.violations = {}
  if #v > 0 then
    error(table.concat(v, '\n'), 0)
  end
end

return S
