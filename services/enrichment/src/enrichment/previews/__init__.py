"""Link previews: a saved link's title, description, picture and icon, fetched without AI or quota."""
